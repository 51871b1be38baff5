// peak_rss_exec OUT_FILE COMMAND [ARGS...]: runs COMMAND, writes its peak RSS (KiB, from wait4)
// to OUT_FILE and exits with its exit code (128 + the signal when killed).
//
// Why a program of its own: a child forked from a large benchmark process (perf_report serves
// S3 answers in-process) starts with a copy of the parent's page tables, and the kernel carries
// that resident size into the child's peak across exec; forked from this small program instead,
// the command's peak is its own.
#include <cstdio>
#include <cstdlib>

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: peak_rss_exec OUT_FILE COMMAND [ARGS...]\n");
    return 64;
  }
  const pid_t child = ::fork();
  if (child < 0) return 71;
  if (child == 0) {
    ::execv(argv[2], argv + 2);
    std::_Exit(127);
  }
  int status = 0;
  struct rusage usage {};
  if (::wait4(child, &status, 0, &usage) < 0) return 71;
  if (FILE* out = std::fopen(argv[1], "w")) {
    std::fprintf(out, "%ld\n", usage.ru_maxrss);
    std::fclose(out);
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
