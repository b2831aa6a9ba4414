/* ds4d-memhog: the memory hog of the VM test's memory-pressure checks (guest-checks.sh).
 *
 * usage: ds4d-memhog TARGET_KIB
 * Allocates and touches anonymous memory in 4 MiB steps until MemAvailable drops below
 * TARGET_KIB, prints "holding N MiB" once, and keeps MemAvailable below the target (topping
 * up when it rises) until it is killed. TARGET_KIB 0 grows without bound, at most 4 MiB per
 * 20 ms, so that earlyoom (polling every 100 ms or faster) gets to it before the kernel's OOM
 * killer would. Built statically by vm-test.sh on the host: the guest has no compiler.
 * Exit status: 2 on bad usage; otherwise it only ends by a signal (that is the point). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

static long mem_available_kib(void) {
  FILE* f = fopen("/proc/meminfo", "r");
  char line[256];
  long kib = -1;
  if (!f) return -1;
  while (fgets(line, sizeof line, f))
    if (sscanf(line, "MemAvailable: %ld kB", &kib) == 1) break;
  fclose(f);
  return kib;
}

static void nap_ms(long ms) {
  struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&t, NULL);
}

int main(int argc, char** argv) {
  const size_t step = 4u << 20;
  if (argc != 2) {
    fprintf(stderr, "usage: ds4d-memhog TARGET_KIB (0: grow without bound)\n");
    return 2;
  }
  const long target = strtol(argv[1], NULL, 10);
  size_t held = 0;
  int announced = 0;
  setvbuf(stdout, NULL, _IOLBF, 0);
  for (;;) {
    const long avail = mem_available_kib();
    if (target == 0 || avail > target) {
      char* p = mmap(NULL, step, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (p == MAP_FAILED) {
        nap_ms(100);
        continue;
      }
      memset(p, 0x5a, step); /* touch every page: RSS, not just address space */
      held += step;
      if (target == 0) nap_ms(20);
    } else {
      if (!announced) {
        printf("holding %zu MiB, MemAvailable %ld KiB\n", held >> 20, avail);
        announced = 1;
      }
      nap_ms(100);
    }
  }
}
