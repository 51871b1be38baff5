// Writes one Lucene index with vector fields through Lucene's own IndexWriter and default codec
// (Lucene 9.12: Lucene99HnswVectorsFormat, whose raw vectors live in the Lucene99 flat files), and
// the expected vectors as Java prints them. Run as a single-file program:
//
//   java -cp lucene-core-9.12.x.jar WriteVectorIndex.java OUT_DIR
//
// OUT_DIR/index is the index (one segment, force-merged); OUT_DIR/expected.tsv has one line per
// vector: doc, field, elements joined by ',' (floats by Float.toString, bytes as integers).
// Fields: "dense" (3 floats, every doc), "sparse" (2 floats, every third doc: IndexedDISI sparse
// blocks), "most" (4 floats, all docs but a few: a dense bitset block), "bytes" (5 signed bytes,
// odd docs), and the "dense" vector again in binary doc values as the engines kept vectors before
// Lucene's vector files: "knn_binary" (OpenSearch k-NN: big-endian floats) and "es_binary"
// (Elasticsearch 7 dense_vector: big-endian floats, then the vector's magnitude).
import java.io.PrintWriter;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.apache.lucene.document.BinaryDocValuesField;
import org.apache.lucene.document.Document;
import org.apache.lucene.document.KnnByteVectorField;
import org.apache.lucene.document.KnnFloatVectorField;
import org.apache.lucene.document.StoredField;
import org.apache.lucene.index.IndexWriter;
import org.apache.lucene.index.IndexWriterConfig;
import org.apache.lucene.index.VectorSimilarityFunction;
import org.apache.lucene.store.FSDirectory;
import org.apache.lucene.util.BytesRef;

public class WriteVectorIndex {
  static final int DOCS = 5000;

  static float element(int doc, int i) {
    // Varied magnitudes so printing goes through Float.toString's plain and E notations.
    switch ((doc + i) % 5) {
      case 0:
        return (float) Math.sin(doc * 0.37 + i);
      case 1:
        return (float) (doc * 1.5e-5);
      case 2:
        return -(float) (doc * 12345.678 + i);
      case 3:
        return (float) (1e9 * Math.cos(doc + i));
      default:
        return i - doc % 3;
    }
  }

  static String join(float[] v) {
    StringBuilder out = new StringBuilder();
    for (int i = 0; i < v.length; i++) {
      if (i > 0) out.append(',');
      out.append(Float.toString(v[i]));
    }
    return out.toString();
  }

  public static void main(String[] args) throws Exception {
    Path out = Path.of(args[0]);
    Files.createDirectories(out);
    IndexWriterConfig config = new IndexWriterConfig();
    config.setUseCompoundFile(false);
    try (FSDirectory dir = FSDirectory.open(out.resolve("index"));
        IndexWriter writer = new IndexWriter(dir, config);
        PrintWriter expected =
            new PrintWriter(Files.newBufferedWriter(out.resolve("expected.tsv"), StandardCharsets.UTF_8))) {
      for (int doc = 0; doc < DOCS; doc++) {
        Document d = new Document();
        d.add(new StoredField("n", doc));
        float[] dense = {element(doc, 0), element(doc, 1), element(doc, 2)};
        d.add(new KnnFloatVectorField("dense", dense, VectorSimilarityFunction.EUCLIDEAN));
        expected.println(doc + "\tdense\t" + join(dense));
        ByteBuffer knn = ByteBuffer.allocate(12).order(ByteOrder.BIG_ENDIAN);
        ByteBuffer es = ByteBuffer.allocate(16).order(ByteOrder.BIG_ENDIAN);
        double magnitude = 0;
        for (float f : dense) {
          knn.putFloat(f);
          es.putFloat(f);
          magnitude += (double) f * f;
        }
        es.putFloat((float) Math.sqrt(magnitude));
        d.add(new BinaryDocValuesField("knn_binary", new BytesRef(knn.array())));
        d.add(new BinaryDocValuesField("es_binary", new BytesRef(es.array())));
        if (doc % 3 == 0) {
          float[] sparse = {element(doc, 3), element(doc, 4)};
          d.add(new KnnFloatVectorField("sparse", sparse, VectorSimilarityFunction.DOT_PRODUCT));
          expected.println(doc + "\tsparse\t" + join(sparse));
        }
        if (doc % 997 != 5) {
          float[] most = new float[4];
          for (int i = 0; i < 4; i++) most[i] = element(doc, i + 7);
          d.add(new KnnFloatVectorField("most", most, VectorSimilarityFunction.COSINE));
          expected.println(doc + "\tmost\t" + join(most));
        }
        if (doc % 2 == 1) {
          byte[] bytes = new byte[5];
          StringBuilder text = new StringBuilder();
          for (int i = 0; i < 5; i++) {
            bytes[i] = (byte) (doc * 7 + i * 61);
            if (i > 0) text.append(',');
            text.append(bytes[i]);
          }
          d.add(new KnnByteVectorField("bytes", bytes, VectorSimilarityFunction.EUCLIDEAN));
          expected.println(doc + "\tbytes\t" + text);
        }
        writer.addDocument(d);
      }
      writer.forceMerge(1);
      writer.commit();
    }
  }
}
