// Writes one Lucene index with one-dimensional point fields through Lucene's own IndexWriter and
// default codec, and every point as hex bytes. Run as a single-file program on Lucene 8.6+ (the
// Lucene86 points format, big-endian), 9 or 10 (Lucene90, little-endian):
//
//   java -cp lucene-core-X.jar WritePointsIndex.java OUT_DIR
//
// OUT_DIR/index is the index (one segment, force-merged); OUT_DIR/expected.tsv has one line per
// point: doc, field, the point's bytes in hex. The fields reach each leaf layout: "int" (every
// doc, few distinct values: low-cardinality leaves), "long" (two or three values, one repeated,
// on two docs of three: high-cardinality leaves), "same" (one value on every fifth doc: leaves
// whose values are all equal), "ip" (16 bytes on every seventh doc) and "spread" (random longs on
// every 200th doc: leaves whose documents span more than 16 bits of ids).
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Random;
import org.apache.lucene.document.BinaryPoint;
import org.apache.lucene.document.Document;
import org.apache.lucene.document.Field;
import org.apache.lucene.document.IntPoint;
import org.apache.lucene.document.LongPoint;
import org.apache.lucene.document.StoredField;
import org.apache.lucene.index.IndexWriter;
import org.apache.lucene.index.IndexWriterConfig;
import org.apache.lucene.store.FSDirectory;
import org.apache.lucene.util.BytesRef;

public class WritePointsIndex {
  static final int DOCS = 150_000;

  static void add(Document d, PrintWriter expected, int doc, Field field) {
    d.add(field);
    BytesRef bytes = field.binaryValue();
    StringBuilder hex = new StringBuilder();
    for (int i = 0; i < bytes.length; i++) {
      hex.append(String.format("%02x", bytes.bytes[bytes.offset + i] & 0xff));
    }
    expected.println(doc + "\t" + field.name() + "\t" + hex);
  }

  public static void main(String[] args) throws Exception {
    Path out = Path.of(args[0]);
    Files.createDirectories(out);
    IndexWriterConfig config = new IndexWriterConfig();
    config.setUseCompoundFile(false);
    config.setRAMBufferSizeMB(64);
    Random random = new Random(42);
    try (FSDirectory dir = FSDirectory.open(out.resolve("index"));
        IndexWriter writer = new IndexWriter(dir, config);
        PrintWriter expected =
            new PrintWriter(
                Files.newBufferedWriter(out.resolve("expected.tsv"), StandardCharsets.UTF_8))) {
      for (int doc = 0; doc < DOCS; doc++) {
        Document d = new Document();
        d.add(new StoredField("n", doc));
        add(d, expected, doc, new IntPoint("int", (doc * 7919) % 13 - 6));
        if (doc % 3 != 0) {
          long v = doc * 1_000_003L - (1L << 40);
          add(d, expected, doc, new LongPoint("long", v));
          add(d, expected, doc, new LongPoint("long", -v / 7));
          if (doc % 10 == 1) add(d, expected, doc, new LongPoint("long", v));
        }
        if (doc % 5 == 0) add(d, expected, doc, new LongPoint("same", 42));
        if (doc % 7 == 0) {
          byte[] ip = new byte[16];
          ip[10] = (byte) 0xff;
          ip[11] = (byte) 0xff;
          ip[12] = 10;
          ip[13] = (byte) (doc >> 16);
          ip[14] = (byte) (doc >> 8);
          ip[15] = (byte) doc;
          add(d, expected, doc, new BinaryPoint("ip", ip));
        }
        if (doc % 200 == 0) add(d, expected, doc, new LongPoint("spread", random.nextLong()));
        writer.addDocument(d);
      }
      writer.forceMerge(1);
      writer.commit();
    }
  }
}
