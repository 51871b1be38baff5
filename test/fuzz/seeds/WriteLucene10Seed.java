// The Lucene 10 index the fuzz seeds named lucene10_5* were cut from (segments_1 and _0.si or
// _0.fnm for lucene_segment_infos; the .fdt body after its header for lucene_stored_fields; the
// .dvm body and the whole .dvd for doc_values; the .vemf body and the .vec for vectors; each
// behind its target's input header, see the *_fuzz.cpp files). Run as a single-file program on
// Java 21+ with the lucene-core 10.5.0 jar that scripts/install-deps fetches for OpenSearch 3:
//
//   java -cp lucene-core-10.5.0.jar WriteLucene10Seed.java OUT_DIR
import java.nio.file.Path;
import org.apache.lucene.document.*;
import org.apache.lucene.index.*;
import org.apache.lucene.store.FSDirectory;
public class WriteLucene10Seed {
  public static void main(String[] a) throws Exception {
    IndexWriterConfig c = new IndexWriterConfig();
    c.setUseCompoundFile(false);
    try (FSDirectory d = FSDirectory.open(Path.of(a[0])); IndexWriter w = new IndexWriter(d, c)) {
      for (int i = 0; i < 3; i++) {
        Document doc = new Document();
        doc.add(new StoredField("_source", "{\"n\":" + i + "}"));
        doc.add(new StringField("_id", "id" + i, Field.Store.NO));
        doc.add(new SortedNumericDocValuesField("n", i));
        doc.add(new KnnFloatVectorField("v", new float[] {i, 1f}));
        w.addDocument(doc);
      }
      w.commit();
    }
  }
}
