// The Java baseline for benchmarks/lucene_extract_bench: real Lucene reads `_id` and `_source`
// of every live document of a plain Lucene directory, single-threaded, the work rfs does.
//
//   java -cp <this jar>:<lucene-core jar> rfs.bench.LuceneReadBench <index dir> <rounds> [mode]
//
// mode "document" (default) calls LeafReader.document() per doc, as IndexReader users and the
// Java migration tool do; mode "sequential" reads through the stored-fields merge instance,
// Lucene's fastest sequential path (it keeps the decompressed block between documents).
// Prints one line per round: "docs=<n> source_bytes=<n> seconds=<s>". Liveness follows
// Elasticsearch: Lucene's live docs plus soft deletes on the __soft_deletes field. Nested
// child documents (no stored _id) are skipped, as rfs does.
package rfs.bench;

import java.io.IOException;
import java.nio.file.Paths;
import org.apache.lucene.codecs.StoredFieldsReader;
import org.apache.lucene.index.CodecReader;
import org.apache.lucene.index.DirectoryReader;
import org.apache.lucene.index.FieldInfo;
import org.apache.lucene.index.LeafReader;
import org.apache.lucene.index.LeafReaderContext;
import org.apache.lucene.index.SoftDeletesDirectoryReaderWrapper;
import org.apache.lucene.index.StoredFieldVisitor;
import org.apache.lucene.store.FSDirectory;
import org.apache.lucene.util.Bits;

public final class LuceneReadBench {
  private static final class IdAndSource extends StoredFieldVisitor {
    byte[] id;
    byte[] source;

    void reset() {
      id = null;
      source = null;
    }

    @Override
    public void binaryField(FieldInfo fieldInfo, byte[] value) {
      if (fieldInfo.name.equals("_id")) {
        id = value;
      } else if (fieldInfo.name.equals("_source")) {
        source = value;
      }
    }

    @Override
    public Status needsField(FieldInfo fieldInfo) {
      if (fieldInfo.name.equals("_id") || fieldInfo.name.equals("_source")) return Status.YES;
      return Status.NO;
    }
  }

  public static void main(String[] args) throws IOException {
    if (args.length < 1) {
      System.err.println("usage: LuceneReadBench <index dir> [rounds]");
      System.exit(2);
    }
    int rounds = args.length > 1 ? Integer.parseInt(args[1]) : 3;
    boolean sequential = args.length > 2 && args[2].equals("sequential");
    try (FSDirectory dir = FSDirectory.open(Paths.get(args[0]))) {
      for (int round = 0; round < rounds; ++round) {
        long start = System.nanoTime();
        long docs = 0;
        long sourceBytes = 0;
        try (DirectoryReader raw = DirectoryReader.open(dir)) {
          DirectoryReader reader = new SoftDeletesDirectoryReaderWrapper(raw, "__soft_deletes");
          IdAndSource visitor = new IdAndSource();
          for (LeafReaderContext leaf : reader.leaves()) {
            LeafReader leafReader = leaf.reader();
            Bits live = leafReader.getLiveDocs();
            StoredFieldsReader fields =
                sequential ? ((CodecReader) leafReader).getFieldsReader().getMergeInstance() : null;
            for (int doc = 0; doc < leafReader.maxDoc(); ++doc) {
              if (live != null && !live.get(doc)) continue;
              visitor.reset();
              if (fields != null) {
                fields.visitDocument(doc, visitor);
              } else {
                leafReader.document(doc, visitor);
              }
              if (visitor.id == null) continue;
              ++docs;
              if (visitor.source != null) sourceBytes += visitor.source.length;
            }
          }
        }
        double seconds = (System.nanoTime() - start) / 1e9;
        System.out.printf("docs=%d source_bytes=%d seconds=%.6f%n", docs, sourceBytes, seconds);
      }
    }
  }
}
