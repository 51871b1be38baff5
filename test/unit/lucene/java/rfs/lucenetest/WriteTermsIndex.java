// Writes one Lucene index of keyword-like fields indexed with documents only (as Elasticsearch and
// OpenSearch index `keyword` and `boolean` fields without doc values) through Lucene's own
// IndexWriter and default codec, then lists every term with its documents as Lucene's own
// TermsEnum and PostingsEnum read them back. Runs as a single-file program on Lucene 7.7 to 10:
//
//   java -cp lucene-core-X.jar WriteTermsIndex.java OUT_DIR [DOCS]
//
// OUT_DIR/index is the index (one segment, force-merged); OUT_DIR/expected.tsv has one line per
// term: field, the term's bytes in hex, its document count, and a hash of its documents in order
// (h = h * 1000003 + doc, in 64-bit arithmetic). The terms reach every postings layout: a term in
// every document (consecutive blocks), in every second one (dense blocks: bit sets from Lucene
// 10.1), every seventh (packed deltas), in more than 8,192 documents (level-1 skip headers), in a
// few (the vInt tail only) or one (singletons, given as deltas of the previous one); and every
// dictionary layout: 70,000 unique terms (floor blocks, nested blocks), long shared prefixes
// (LZ4-compressed suffixes), lower-case ASCII (its own compression) and non-ASCII terms.
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Random;
import org.apache.lucene.document.Document;
import org.apache.lucene.document.Field;
import org.apache.lucene.document.StringField;
import org.apache.lucene.index.DirectoryReader;
import org.apache.lucene.index.IndexWriter;
import org.apache.lucene.index.IndexWriterConfig;
import org.apache.lucene.index.LeafReader;
import org.apache.lucene.index.PostingsEnum;
import org.apache.lucene.index.Terms;
import org.apache.lucene.index.TermsEnum;
import org.apache.lucene.search.DocIdSetIterator;
import org.apache.lucene.store.FSDirectory;
import org.apache.lucene.util.BytesRef;

public class WriteTermsIndex {
  static int DOCS = 210_000;
  static final String[] FIELDS = {"kw", "flag", "id"};

  static void add(Document d, String field, String value) {
    d.add(new StringField(field, value, Field.Store.NO));
  }

  public static void main(String[] args) throws Exception {
    Path out = Path.of(args[0]);
    if (args.length > 1) DOCS = Integer.parseInt(args[1]);  // smaller indices for fuzz seeds
    Files.createDirectories(out);
    IndexWriterConfig config = new IndexWriterConfig();
    config.setUseCompoundFile(false);
    config.setRAMBufferSizeMB(64);
    Random random = new Random(7);
    try (FSDirectory dir = FSDirectory.open(out.resolve("index"))) {
      try (IndexWriter writer = new IndexWriter(dir, config)) {
        for (int doc = 0; doc < DOCS; doc++) {
          Document d = new Document();
          add(d, "kw", "all");
          if (doc % 2 == 0) add(d, "kw", "even");
          add(d, "kw", "mod7-" + (doc % 7));
          if (doc % 997 == 0) add(d, "kw", "sparse");
          add(d, "kw", "r" + random.nextInt(5000));
          if (doc % 11 == 0) {
            add(d, "kw", "a/long/shared/prefix/for/many/terms/of/this/field/" + (doc % 500));
          }
          if (doc % 13 == 0) add(d, "kw", "Ünïcödé-" + (doc % 17) + "-ß");
          if (doc == 12345 || doc == 12346 || doc == DOCS - 1) add(d, "kw", "rare" + doc);
          if (doc % 3 != 0) add(d, "flag", doc % 3 == 1 ? "T" : "F");
          if (doc % 3 == 0) add(d, "id", "document-number-" + doc);
          writer.addDocument(d);
        }
        writer.forceMerge(1);
        writer.commit();
      }
      try (DirectoryReader reader = DirectoryReader.open(dir);
          PrintWriter expected =
              new PrintWriter(
                  Files.newBufferedWriter(out.resolve("expected.tsv"), StandardCharsets.UTF_8))) {
        LeafReader leaf = reader.leaves().get(0).reader();
        for (String field : FIELDS) {
          Terms terms = leaf.terms(field);
          TermsEnum te = terms.iterator();
          PostingsEnum postings = null;
          for (BytesRef term = te.next(); term != null; term = te.next()) {
            postings = te.postings(postings, PostingsEnum.NONE);
            long hash = 0;
            int count = 0;
            for (int doc = postings.nextDoc();
                doc != DocIdSetIterator.NO_MORE_DOCS;
                doc = postings.nextDoc()) {
              hash = hash * 1000003L + doc;
              count++;
            }
            StringBuilder hex = new StringBuilder();
            for (int i = 0; i < term.length; i++) {
              hex.append(String.format("%02x", term.bytes[term.offset + i] & 0xff));
            }
            expected.println(field + "\t" + hex + "\t" + count + "\t" + hash);
          }
        }
      }
    }
  }
}
