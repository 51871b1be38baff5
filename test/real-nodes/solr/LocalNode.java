// Starts one real SolrCloud node in this JVM for scripts/local-cluster --distribution solr: Solr's
// own Jetty runner and CoreContainer with an embedded ZooKeeper, as the test framework's
// MiniSolrCloudCluster lays them out (Solr's collection backups need SolrCloud). At each start it
// uploads --configset as the _default configset, so that a collection created without
// collection.configName gets it, and names --repo-path as the default backup location
// (solr.xml's <backup> section) and as allowPaths.
//
// Solr's test cluster starts only in an empty folder, so the node's collections and ZooKeeper's
// data (under --base's solr/) do not outlive a stop: scripts/local-cluster empties it at each
// start; the backups under --repo-path stay.
//
// Once the node answers, this writes "<pid> <http port>" to --ready-file (atomically) and then
// parks until SIGTERM, whose shutdown hook stops the node and ZooKeeper.

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.CountDownLatch;

import org.apache.solr.cloud.MiniSolrCloudCluster;
import org.apache.solr.embedded.JettyConfig;
import org.apache.solr.embedded.JettySolrRunner;

public final class LocalNode {
    private LocalNode() {}

    private static void usage(String message) {
        System.err.println("LocalNode: " + message);
        System.err.println("usage: LocalNode --base DIR --ready-file FILE --port P|FROM-TO --repo-path DIR"
                + " --configset DIR");
        System.exit(2);
    }

    // The first port of FROM-TO that binds on 127.0.0.1 (Jetty binds it right after: a port taken
    // in between fails the start, which scripts/local-cluster reports).
    private static int freePort(String spec) throws IOException {
        int dash = spec.indexOf('-');
        int from = Integer.parseInt(dash < 0 ? spec : spec.substring(0, dash));
        int to = dash < 0 ? from : Integer.parseInt(spec.substring(dash + 1));
        for (int p = from; p <= to; p++) {
            try (ServerSocket s = new ServerSocket()) {
                s.setReuseAddress(true);
                s.bind(new InetSocketAddress(InetAddress.getByName("127.0.0.1"), p));
                return p;
            } catch (IOException taken) {
                // next
            }
        }
        throw new IOException("no free port in " + spec);
    }

    private static String solrXml(String repoPath) {
        String xml = MiniSolrCloudCluster.DEFAULT_CLOUD_SOLR_XML;
        String backup = "  <backup>\n"
                + "    <repository name=\"local\" class=\"org.apache.solr.core.backup.repository.LocalFileSystemRepository\""
                + " default=\"true\">\n"
                + "      <str name=\"location\">" + repoPath.replace("&", "&amp;").replace("<", "&lt;") + "</str>\n"
                + "    </repository>\n"
                + "  </backup>\n";
        int end = xml.lastIndexOf("</solr>");
        return xml.substring(0, end) + backup + xml.substring(end);
    }

    public static void main(String[] args) throws Exception {
        Map<String, String> opts = new LinkedHashMap<>();
        for (int i = 0; i < args.length; i++) {
            String a = args[i];
            if (i + 1 >= args.length) usage("missing value after " + a);
            switch (a) {
                case "--base": case "--ready-file": case "--port": case "--repo-path": case "--configset":
                    opts.put(a, args[++i]);
                    break;
                default:
                    usage("unknown argument " + a);
            }
        }
        for (String k : new String[] {"--base", "--ready-file", "--port", "--repo-path", "--configset"}) {
            if (!opts.containsKey(k)) usage(k + " is required");
        }
        Path base = Paths.get(opts.get("--base"));
        String repo = Paths.get(opts.get("--repo-path")).toAbsolutePath().toString();

        MiniSolrCloudCluster cluster = null;
        try {
            // Backups and restores may only touch these paths (CoreContainer's allowPaths).
            System.setProperty("solr.allowPaths", repo);
            int port = freePort(opts.get("--port"));
            System.setProperty("hostPort", Integer.toString(port));
            JettyConfig jetty = JettyConfig.builder().setPort(port).setContext("/solr").useOnlyHttp1(true).build();
            Files.createDirectories(base);
            cluster = new MiniSolrCloudCluster(1, base.resolve("solr"), solrXml(repo), jetty);
            MiniSolrCloudCluster started = cluster;
            Runtime.getRuntime().addShutdownHook(new Thread(() -> {
                try {
                    started.shutdown();
                } catch (Exception e) {
                    e.printStackTrace();
                }
            }, "local-node-shutdown"));
            cluster.uploadConfigSet(Paths.get(opts.get("--configset")), "_default");
            JettySolrRunner node = cluster.getJettySolrRunner(0);
            int bound = node.getLocalPort();

            Path ready = Paths.get(opts.get("--ready-file"));
            Path tmp = ready.resolveSibling(ready.getFileName() + ".tmp");
            String line = ProcessHandle.current().pid() + " " + bound + "\n";
            Files.write(tmp, line.getBytes(StandardCharsets.US_ASCII));
            Files.move(tmp, ready, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
            System.out.println("LocalNode: ready on " + node.getBaseUrl());
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
