// A program outside the doorbell tree: one Bell in shared memory, rung by a
// forked child, waited for by the parent. Exit 0 when the ring arrived.
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <new>

#include <doorbell/bell.h>

int main() {
  void* page = ::mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (page == MAP_FAILED) return 2;
  auto* bell = new (page) doorbell::Bell();
  const pid_t child = ::fork();
  if (child < 0) return 2;
  if (child == 0) {
    bell->ring();
    ::_exit(0);
  }
  const bool rang = bell->wait_for(std::chrono::seconds(30));
  int status = 0;
  ::waitpid(child, &status, 0);
  std::printf("consumer: %s\n", rang ? "rang across fork" : "no ring within 30 s");
  return rang && WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}
