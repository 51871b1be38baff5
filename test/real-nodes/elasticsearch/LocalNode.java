// Starts one real Elasticsearch node in this JVM for scripts/local-cluster --distribution
// elasticsearch: the engine's own org.elasticsearch.node.Node with the modules of a distribution,
// built by codelibs' elasticsearch-cluster-runner. The OpenSearch launcher beside it
// (../opensearch/LocalNode.java) is the same program; this one has no secure settings (no
// Elasticsearch plugin here needs them) and no list values, and it uses only calls that are the
// same in Elasticsearch 5.6, 6.8 and 7.10.
//
// scripts/local-cluster writes the node's elasticsearch.yml and log4j2.properties under --conf and
// passes the per-start settings (ports, names) as -E key=value. Once the node answers, this writes
// "<pid> <http port>" to --ready-file (atomically) and then parks until SIGTERM, whose shutdown hook
// closes the node.

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;

import org.codelibs.elasticsearch.runner.ElasticsearchClusterRunner;
import org.elasticsearch.http.HttpServerTransport;
import org.elasticsearch.node.Node;

public final class LocalNode {
    private LocalNode() {}

    private static void usage(String message) {
        System.err.println("LocalNode: " + message);
        System.err.println("usage: LocalNode --base DIR --conf DIR --data DIR --logs DIR --ready-file FILE"
                + " [-E key=value]...");
        System.exit(2);
    }

    public static void main(String[] args) throws Exception {
        Map<String, String> paths = new LinkedHashMap<>();
        Map<String, String> settings = new LinkedHashMap<>();
        for (int i = 0; i < args.length; i++) {
            String a = args[i];
            if (i + 1 >= args.length) usage("missing value after " + a);
            String v = args[++i];
            switch (a) {
                case "--base": case "--conf": case "--data": case "--logs": case "--ready-file":
                    paths.put(a, v);
                    break;
                case "-E": {
                    int eq = v.indexOf('=');
                    if (eq <= 0) usage("-E needs key=value, got " + v);
                    settings.put(v.substring(0, eq), v.substring(eq + 1));
                    break;
                }
                default:
                    usage("unknown argument " + a);
            }
        }
        for (String k : new String[] {"--base", "--conf", "--data", "--logs", "--ready-file"}) {
            if (!paths.containsKey(k)) usage(k + " is required");
        }

        ElasticsearchClusterRunner runner = new ElasticsearchClusterRunner();
        runner.onBuild((number, builder) -> settings.forEach(builder::put));

        List<String> runnerArgs = new ArrayList<>(Arrays.asList(
                "-basePath", paths.get("--base"),
                "-confPath", paths.get("--conf"),
                "-dataPath", paths.get("--data"),
                "-logsPath", paths.get("--logs"),
                "-numOfNode", "1",
                "-printOnFailure"));
        if (settings.containsKey("cluster.name")) {
            runnerArgs.add("-clusterName");
            runnerArgs.add(settings.get("cluster.name"));
        }

        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            try {
                runner.close();
            } catch (Exception e) {
                e.printStackTrace();
            }
        }, "local-node-shutdown"));

        try {
            runner.build(runnerArgs.toArray(new String[0]));
            Node node = runner.getNode(0);
            int port = node.injector().getInstance(HttpServerTransport.class).boundAddress().publishAddress().getPort();
            // Yellow, not green: indices kept from an earlier start may have replicas, which one node
            // never assigns. A new node has no index and is green at once.
            runner.ensureYellow();

            Path ready = Paths.get(paths.get("--ready-file"));
            Path tmp = ready.resolveSibling(ready.getFileName() + ".tmp");
            String line = ProcessHandle.current().pid() + " " + port + "\n";
            Files.write(tmp, line.getBytes(StandardCharsets.US_ASCII));
            Files.move(tmp, ready, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
            System.out.println("LocalNode: ready on http://127.0.0.1:" + port);
        } catch (Throwable t) {
            t.printStackTrace(System.out);
            Throwable cause = t;
            while (cause.getCause() != null && cause.getCause() != cause) cause = cause.getCause();
            // Last, so that the end of the log (what scripts/local-cluster shows) names the cause.
            System.out.println("LocalNode: the node did not start: " + cause);
            System.out.flush();
            Runtime.getRuntime().halt(1);
        }

        new CountDownLatch(1).await();
    }
}
