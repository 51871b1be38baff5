// Runs each case of a Jolt case file through the Java Jolt library (com.bazaarvoice.jolt 0.1.8, the
// version the Java migration tool runs), so that the tests can compare rfs's Jolt with it.
//
//   java -cp <jolt-core, Jackson and javax.inject jars> RunJolt.java <out-dir> <cases.json>
//
// cases.json: [{"name": ..., "chain": [<operation>...], "input": ...}]. Writes
// <out-dir>/results.json: [{"name": ..., "output": ...} or {"name": ..., "error": "<class>",
// "phase": "spec" | "run"}].
import com.bazaarvoice.jolt.Chainr;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.File;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

public class RunJolt {
  public static void main(String[] args) throws Exception {
    ObjectMapper mapper = new ObjectMapper();
    File out = new File(args[0]);
    out.mkdirs();
    List<Map<String, Object>> cases = mapper.readValue(new File(args[1]), List.class);
    List<Map<String, Object>> results = new ArrayList<>();
    for (Map<String, Object> c : cases) {
      Map<String, Object> result = new LinkedHashMap<>();
      result.put("name", c.get("name"));
      results.add(result);
      Chainr chainr;
      try {
        chainr = Chainr.fromSpec(c.get("chain"));
      } catch (RuntimeException e) {
        result.put("error", e.getClass().getSimpleName());
        result.put("phase", "spec");
        continue;
      }
      try {
        result.put("output", chainr.transform(c.get("input")));
      } catch (RuntimeException e) {
        result.put("error", e.getClass().getSimpleName());
        result.put("phase", "run");
      }
    }
    mapper.writeValue(new File(out, "results.json"), results);
  }
}
