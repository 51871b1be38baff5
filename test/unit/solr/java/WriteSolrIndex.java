// Writes the Lucene index of a Solr 6 or 7 core through that Lucene's own IndexWriter and default
// codec, each field as Solr of that release keeps it (solr/core/src/java/org/apache/solr/schema/:
// TrieField, PointField, StrField, BoolField, TextField), for the backups of Solrs that do not run
// here. Runs as a single-file program on Lucene 6.6 or 7.7:
//
//   java -cp lucene-core-X.jar WriteSolrIndex.java OUT_DIR [--doc-values]
//
// OUT_DIR/index is the index: two segments (a commit between them), a deleted document, a block of
// a child and its parent (Solr 6/7 children are documents of their own: no _nest_path_). With
// --doc-values (Solr 7: Lucene70 doc values) some fields live in doc values only; without it
// (Solr 6: Lucene54 doc values, which rfs does not read) every field is stored. The schema and the
// documents /select returns for this index are written by the C++ test beside its expectations.
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.apache.lucene.document.Document;
import org.apache.lucene.document.Field;
import org.apache.lucene.document.NumericDocValuesField;
import org.apache.lucene.document.SortedDocValuesField;
import org.apache.lucene.document.SortedNumericDocValuesField;
import org.apache.lucene.document.SortedSetDocValuesField;
import org.apache.lucene.document.StoredField;
import org.apache.lucene.document.StringField;
import org.apache.lucene.index.IndexWriter;
import org.apache.lucene.index.IndexWriterConfig;
import org.apache.lucene.index.Term;
import org.apache.lucene.store.FSDirectory;
import org.apache.lucene.util.BytesRef;
import org.apache.lucene.util.NumericUtils;

public class WriteSolrIndex {
  static boolean docValues = false;

  // The uniqueKey: a StrField, indexed and stored.
  static Document withId(String id) {
    Document d = new Document();
    d.add(new StringField("id", id, Field.Store.YES));
    return d;
  }

  static Document doc(int i) {
    Document d = withId("d" + i);
    d.add(new StoredField("title_t", "Title number " + i));  // TextField, stored
    d.add(new StoredField("n_ti", i * 10));  // TrieIntField: the int itself
    d.add(new StoredField("big_tl", 9_000_000_000L + i));  // TrieLongField
    d.add(new StoredField("ratio_tf", i + 0.25f));  // TrieFloatField
    d.add(new StoredField("when_tdt", 1_500_000_000_000L + i * 86_400_001L));  // TrieDateField: ms
    d.add(new StoredField("flag_b", i % 2 == 0 ? "T" : "F"));  // BoolField: "T" / "F"
    for (String tag : new String[] {"z" + i, "a", "z" + i}) {
      d.add(new StoredField("tags_ss", tag));  // multiValued StrField, in order, repeats kept
    }
    if (docValues) {
      // Solr 7: a single float in NUMERIC doc values as its raw bits; several longs as points
      // in SORTED_NUMERIC; several strings in SORTED_SET; one string in SORTED.
      d.add(new NumericDocValuesField("score_pf", Float.floatToIntBits(i * 1.5f + 0.5f)));
      for (long v : new long[] {i * 3L, -1L, i * 3L}) {
        d.add(new SortedNumericDocValuesField("counts_pls", v));
      }
      for (double v : new double[] {i + 0.5, -2.25}) {
        d.add(new SortedNumericDocValuesField("ws_pds", NumericUtils.doubleToSortableLong(v)));
      }
      for (String code : new String[] {"y", "x", "y"}) {
        d.add(new SortedSetDocValuesField("codes_sdv", new BytesRef(code)));
      }
      d.add(new SortedDocValuesField("kind_s1dv", new BytesRef(i % 3 == 0 ? "three" : "other")));
    }
    return d;
  }

  public static void main(String[] args) throws Exception {
    Path out = Path.of(args[0]);
    docValues = args.length > 1 && args[1].equals("--doc-values");
    Files.createDirectories(out);
    IndexWriterConfig config = new IndexWriterConfig(null);  // no field here is tokenized
    config.setUseCompoundFile(false);
    try (FSDirectory dir = FSDirectory.open(out.resolve("index"))) {
      try (IndexWriter writer = new IndexWriter(dir, config)) {
        for (int i = 0; i < 5; i++) writer.addDocument(doc(i));
        writer.commit();
        // A block: the child, then its parent; both carry _root_ (indexed only).
        List<Document> block = new ArrayList<>();
        Document child = withId("d5-child");
        child.add(new StoredField("n_ti", 1));
        child.add(new StringField("_root_", "d5", Field.Store.NO));
        block.add(child);
        Document parent = doc(5);
        parent.add(new StringField("_root_", "d5", Field.Store.NO));
        block.add(parent);
        writer.addDocuments(block);
        for (int i = 6; i < 8; i++) writer.addDocument(doc(i));
        writer.deleteDocuments(new Term("id", "d2"));
        writer.commit();
      }
    }
    Files.writeString(out.resolve("written"), "");
  }
}
