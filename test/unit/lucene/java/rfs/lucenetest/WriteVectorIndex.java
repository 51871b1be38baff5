// Writes one Lucene index with vector fields through Lucene's own IndexWriter and default codec,
// and the expected vectors as Java prints them. Run as a single-file program on any Lucene 9 core:
//
//   java -cp lucene-core-9.x.y.jar WriteVectorIndex.java OUT_DIR
//
// Each release writes its own vector format: 9.0 Lucene90HnswVectorsFormat, 9.1 Lucene91, 9.2-9.3
// Lucene92, 9.4 Lucene94 (the first with byte vectors), 9.5-9.8 Lucene95, and 9.9-9.12
// Lucene99HnswVectorsFormat, whose raw vectors live in the Lucene99 flat files. Float vectors go
// through KnnVectorField, which every Lucene 9 release has; byte vectors through whichever API the
// release offers (none before 9.4: the "bytes" field is then left out).
//
// OUT_DIR/index is the index (one segment, force-merged); OUT_DIR/expected.tsv has one line per
// vector: doc, field, elements joined by ',' (floats by Float.toString, bytes as integers).
// Fields: "dense" (3 floats, every doc), "sparse" (2 floats, every third doc: IndexedDISI sparse
// blocks), "most" (4 floats, all docs but a few: a dense bitset block), "bytes" (5 signed bytes,
// odd docs, from Lucene 9.4), and the "dense" vector again in binary doc values as the engines kept vectors before
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
import org.apache.lucene.document.Field;
import org.apache.lucene.document.FieldType;
import org.apache.lucene.document.KnnVectorField;
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

  @SuppressWarnings("deprecation")
  static Field floats(String name, float[] v, VectorSimilarityFunction similarity) {
    return new KnnVectorField(name, v, similarity);
  }

  // A byte vector field through Lucene 9.5+'s KnnByteVectorField or Lucene 9.4's KnnVectorField
  // with a BYTE field type (found by reflection: this file compiles against every Lucene 9); null
  // before 9.4.
  static Field bytes(String name, byte[] v, VectorSimilarityFunction similarity) throws Exception {
    try {
      Class<?> field = Class.forName("org.apache.lucene.document.KnnByteVectorField");
      return (Field)
          field
              .getConstructor(String.class, byte[].class, VectorSimilarityFunction.class)
              .newInstance(name, v, similarity);
    } catch (ClassNotFoundException newer) {
      // Lucene 9.4 or older.
    }
    Class<?> encoding;
    try {
      encoding = Class.forName("org.apache.lucene.index.VectorEncoding");
    } catch (ClassNotFoundException older) {
      return null;
    }
    Object byteEncoding = encoding.getField("BYTE").get(null);
    FieldType type =
        (FieldType)
            KnnVectorField.class
                .getMethod(
                    "createFieldType", int.class, encoding, VectorSimilarityFunction.class)
                .invoke(null, v.length, byteEncoding, similarity);
    return KnnVectorField.class
        .getConstructor(String.class, BytesRef.class, FieldType.class)
        .newInstance(name, new BytesRef(v), type);
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
        d.add(floats("dense", dense, VectorSimilarityFunction.EUCLIDEAN));
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
          d.add(floats("sparse", sparse, VectorSimilarityFunction.DOT_PRODUCT));
          expected.println(doc + "\tsparse\t" + join(sparse));
        }
        if (doc % 997 != 5) {
          float[] most = new float[4];
          for (int i = 0; i < 4; i++) most[i] = element(doc, i + 7);
          d.add(floats("most", most, VectorSimilarityFunction.COSINE));
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
          Field byteField = bytes("bytes", bytes, VectorSimilarityFunction.EUCLIDEAN);
          if (byteField != null) {
            d.add(byteField);
            expected.println(doc + "\tbytes\t" + text);
          }
        }
        writer.addDocument(d);
      }
      writer.forceMerge(1);
      writer.commit();
    }
  }
}
