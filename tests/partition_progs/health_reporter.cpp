// A partition program for the health monitor's tests: it attaches to its
// health block through DOORBELL_HEALTH_FD (across its exec), reports an
// application error with the code given as argv[1], and then waits for ever
// (the scheduler kills it at the end). Exits 3 when it cannot attach.
#include <unistd.h>

#include <cstdlib>

#include "doorbell/partition_health.h"

int main(int argc, char** argv) {
  if (!doorbell::partition::attach_health()) return 3;
  doorbell::partition::report_error(argc > 1 ? std::atoi(argv[1]) : 1);
  for (;;) ::pause();
}
