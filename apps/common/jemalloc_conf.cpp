// jemalloc's options for the tools (read by jemalloc at start-up; MALLOC_CONF still overrides).
// By default jemalloc keeps freed pages for 10 s before giving them back, so a worker's resident
// set carries every large buffer it freed recently (decoded huge documents, S3 blocks, bulk
// bodies). A background thread returning them after 100 ms keeps the 1 GB export as fast and its
// peak RSS about 30% lower; returning them at once (decay 0) costs 50% more wall time in the
// kernel.
extern "C" {
// NOLINTNEXTLINE: the name and type jemalloc looks for.
const char* malloc_conf = "background_thread:true,dirty_decay_ms:100,muzzy_decay_ms:0";
}
