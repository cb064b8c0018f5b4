#include "lab/common/costs_probes.h"

#include <elf.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <sys/auxv.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

#include <cerrno>
#include <cstddef>
#include <cstring>
#include <stdexcept>

#include "lab/common/deadline.h"
#include "lab/common/signal_scope.h"
#include "lab/common/time.h"
#include "sys/error.h"
#include "sys/proc.h"
#include "sys/tgkill.h"

namespace doorbell::lab::costs {
namespace {

uint64_t xgetbv_raw(uint32_t index) noexcept {
#if defined(__x86_64__)
  uint32_t lo = 0, hi = 0;
  asm volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(index));
  return (static_cast<uint64_t>(hi) << 32) | lo;
#else
  (void)index;
  return 0;
#endif
}

std::atomic<pid_t> g_probe_receiver{0};

void record_receiver(int, siginfo_t*, void*) {
  g_probe_receiver.store(sys::current_tid(), std::memory_order_release);
}

}  // namespace

// ------------------------------------------------------------ vector state

std::string VectorSupport::why_not_avx2() const {
  if (!x86_64) return "not an x86-64 machine";
  if (!xsave) return "the CPU has no XSAVE";
  if (!osxsave) return "the kernel did not enable XSAVE (CPUID OSXSAVE clear)";
  if (!avx2) return "the CPU has no AVX2";
  if ((xcr0 & 0x6) != 0x6) return "the kernel did not enable AVX state in XCR0";
  return {};
}

std::string VectorSupport::why_not_avx512() const {
  std::string why = why_not_avx2();
  if (!why.empty()) return why;
  if (!avx512f) return "the CPU has no AVX-512F";
  if ((xcr0 & 0xe6) != 0xe6) return "the kernel did not enable AVX-512 state in XCR0";
  return {};
}

std::string VectorSupport::why_not_xinuse() const {
  if (!x86_64) return "not an x86-64 machine";
  if (!osxsave) return "XSAVE is not enabled by the kernel";
  if (!xgetbv1) return "the CPU does not report XINUSE (no XGETBV with ECX=1)";
  return {};
}

VectorSupport probe_vector_support() noexcept {
  VectorSupport s;
#if defined(__x86_64__)
  s.x86_64 = true;
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (__get_cpuid_count(1, 0, &a, &b, &c, &d)) {
    s.xsave = (c >> 26) & 1;
    s.osxsave = (c >> 27) & 1;
  }
  if (__get_cpuid_count(7, 0, &a, &b, &c, &d)) {
    s.avx2 = (b >> 5) & 1;
    s.avx512f = (b >> 16) & 1;
  }
  if (s.xsave && __get_cpuid_count(0xd, 1, &a, &b, &c, &d)) s.xgetbv1 = (a >> 2) & 1;
  if (s.osxsave) s.xcr0 = xgetbv_raw(0);
  if (s.osxsave && __get_cpuid_count(0xd, 0, &a, &b, &c, &d)) s.xsave_area_bytes = b;
#endif
  return s;
}

uint64_t xinuse() noexcept {
  return xgetbv_raw(1);
}

const char* vector_state_name(VectorState s) noexcept {
  switch (s) {
    case VectorState::clean:
      return "clean";
    case VectorState::avx2:
      return "avx2";
    case VectorState::avx512:
      return "avx512";
  }
  return "?";
}

uint64_t vector_state_bits(VectorState s) noexcept {
  switch (s) {
    case VectorState::clean:
      return 0;
    case VectorState::avx2:
      return kXstateAvx;
    case VectorState::avx512:
      return kXstateAvx | kXstateAvx512;
  }
  return 0;
}

void reset_vector_components(const VectorSupport& support, uint64_t mask) noexcept {
#if defined(__x86_64__)
  mask &= support.xcr0 & kXstateManaged;
  if (mask == 0) return;
  // The area lives in thread-local storage, not on the stack: a sanitizer's
  // stack instrumentation would otherwise clear its redzones with glibc's
  // memset on the way out, and glibc's EVEX memset itself dirties ZMM16-31.
  struct alignas(64) Area {
    unsigned char legacy[512];
    uint64_t xstate_bv;
    uint64_t xcomp_bv;
    unsigned char reserved[48];
  };
  static thread_local Area area;  // zero-initialized: XSTATE_BV = XCOMP_BV = 0
  uint32_t mxcsr = 0;
  asm volatile("stmxcsr %0" : "=m"(mxcsr));
  // Byte-wise, for the same reason as above (no library memcpy).
  for (std::size_t i = 0; i < sizeof mxcsr; ++i)
    area.legacy[24 + i] = static_cast<unsigned char>(mxcsr >> (8 * i));
  asm volatile("xrstor %0"
               :
               : "m"(area), "a"(static_cast<uint32_t>(mask)), "d"(static_cast<uint32_t>(mask >> 32))
               : "memory");
#else
  (void)support;
  (void)mask;
#endif
}

bool set_vector_state(const VectorSupport& support, VectorState state) noexcept {
#if defined(__x86_64__)
  switch (state) {
    case VectorState::clean:
      if (!support.xrstor_usable()) return false;
      reset_vector_components(support, kXstateManaged);
      return true;
    case VectorState::avx2:
      if (!support.avx2_usable()) return false;
      reset_vector_components(support, kXstateManaged);
      asm volatile("vpcmpeqd %%ymm8, %%ymm8, %%ymm8" ::: "xmm8");
      return true;
    case VectorState::avx512:
      if (!support.avx512_usable()) return false;
      reset_vector_components(support, kXstateManaged);
      asm volatile(
          "vpcmpeqd %%ymm8, %%ymm8, %%ymm8\n\t"
          "vpternlogd $0xff, %%zmm8, %%zmm8, %%zmm8\n\t"
          "vpternlogd $0xff, %%zmm16, %%zmm16, %%zmm16\n\t"
          "kxnorw %%k1, %%k1, %%k1"
          :
          :
          : "xmm8"
#if defined(__AVX512F__)
            ,
            "xmm16", "k1"
#endif
      );
      return true;
  }
#else
  (void)support;
  (void)state;
#endif
  return false;
}

SelfSignalRoundTrip self_signal_round_trip(const VectorSupport& support, VectorState state,
                                           int signo) noexcept {
  SelfSignalRoundTrip r;
  const pid_t pid = getpid();
  const pid_t tid = sys::current_tid();
  r.state_set = set_vector_state(support, state);
  if (support.xgetbv1) r.xinuse_before = xinuse() & kXstateManaged;
  r.rc = sys::tgkill(pid, tid, signo);
  if (support.xgetbv1) r.xinuse_after = xinuse() & kXstateManaged;
  return r;
}

void touch_avx512_in_handler() noexcept {
#if defined(__x86_64__)
  asm volatile(
      "vpternlogd $0xff, %%zmm16, %%zmm16, %%zmm16\n\t"
      "vpternlogd $0xff, %%zmm8, %%zmm8, %%zmm8\n\t"
      "vpaddd %%zmm16, %%zmm8, %%zmm8\n\t"
      "kxnorw %%k1, %%k1, %%k1"
      :
      :
      : "xmm8"
#if defined(__AVX512F__)
        ,
        "xmm16", "k1"
#endif
  );
#endif
}

long min_signal_stack_size() noexcept {
#if defined(AT_MINSIGSTKSZ)
  return static_cast<long>(getauxval(AT_MINSIGSTKSZ));
#else
  return 0;
#endif
}

// ------------------------------------------------------------------- guards

ScopedRealItimer::ScopedRealItimer() {
  if (getitimer(ITIMER_REAL, &old_) != 0) sys::throw_errno("getitimer");
}

ScopedRealItimer::~ScopedRealItimer() {
  setitimer(ITIMER_REAL, &old_, nullptr);
}

// --------------------------------------------------- RLIMIT_SIGPENDING probe

SigpendingProbeResult probe_sigpending_limit(long limit, int signo, long extra_attempts) {
  if (limit < 1 || limit > 65536) throw std::invalid_argument("limit must be in 1..65536");
  if (signo < SIGRTMIN || signo > SIGRTMAX)
    throw std::invalid_argument("probe_sigpending_limit needs a real-time signal");
  struct Shared {
    uint32_t done;
    int failure_errno;
    int setup_errno;
    long queued;
    long attempts;
    uint32_t failed_send_ns;
    uint32_t send_ns[65536];
  };
  void* mem =
      mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) sys::throw_errno("mmap");
  auto* shared = static_cast<Shared*>(mem);
  std::memset(shared, 0, offsetof(Shared, send_ns));

  SigpendingProbeResult result;
  result.limit = limit;
  const pid_t child = fork();
  if (child < 0) {
    const int e = errno;
    munmap(mem, sizeof(Shared));
    sys::throw_errno(e, "fork");
  }
  if (child == 0) {
    // Only async-signal-safe calls from here: the parent may have threads.
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, signo);
    if (sigprocmask(SIG_BLOCK, &set, nullptr) != 0) {
      shared->setup_errno = errno;
      _exit(1);
    }
    const rlimit rl{static_cast<rlim_t>(limit), static_cast<rlim_t>(limit)};
    if (setrlimit(RLIMIT_SIGPENDING, &rl) != 0) {
      shared->setup_errno = errno;
      _exit(1);
    }
    const pid_t self = getpid();
    long queued = 0;
    long attempts = 0;
    while (attempts < limit + extra_attempts) {
      sigval value;
      value.sival_int = static_cast<int>(attempts);
      const uint64_t t0 = monotonic_ns();
      const int rc = sigqueue(self, signo, value);
      const uint64_t t1 = monotonic_ns();
      ++attempts;
      if (rc != 0) {
        shared->failure_errno = errno;
        shared->failed_send_ns = static_cast<uint32_t>(t1 - t0);
        break;
      }
      if (queued < 65536) shared->send_ns[queued] = static_cast<uint32_t>(t1 - t0);
      ++queued;
    }
    shared->queued = queued;
    shared->attempts = attempts;
    __atomic_store_n(&shared->done, 1u, __ATOMIC_RELEASE);
    _exit(0);  // the queued signals die with the child
  }
  // The child's 64 Ki sends take milliseconds; one that takes 10 s is stuck.
  const ReapResult reaped = reap_child_or_kill(child, Deadline::after(10.0));
  const int status = reaped.status;
  if (reaped.killed) {
    result.error = "the child did not finish in 10 s (killed)";
  } else if (__atomic_load_n(&shared->done, __ATOMIC_ACQUIRE) == 1u) {
    result.child_ran = true;
    result.queued = shared->queued;
    result.attempts = shared->attempts;
    result.failure_errno = shared->failure_errno;
    result.failed_send_ns = shared->failed_send_ns;
    const long n = result.queued < 65536 ? result.queued : 65536;
    result.send_ns.assign(shared->send_ns, shared->send_ns + n);
  } else if (shared->setup_errno != 0) {
    result.error = std::string("child set-up failed: ") + std::strerror(shared->setup_errno);
  } else {
    result.error = "child did not report (status " + std::to_string(status) + ")";
  }
  munmap(mem, sizeof(Shared));
  return result;
}

// ------------------------------------------------ thread-directed delivery

SleepingThreads::SleepingThreads(int count, int signo) {
  stop_fd_ = eventfd(0, EFD_CLOEXEC);
  if (stop_fd_ < 0) sys::throw_errno("eventfd");
  tids_.assign(static_cast<std::size_t>(count), 0);
  threads_.reserve(static_cast<std::size_t>(count));
  for (int i = 0; i < count; ++i) {
    threads_.emplace_back([this, i, signo] {
      sigset_t set;
      sigemptyset(&set);
      sigaddset(&set, signo);
      pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
      __atomic_store_n(&tids_[static_cast<std::size_t>(i)], sys::current_tid(), __ATOMIC_RELAXED);
      // Release: the creator reads the tid after started_ reaches count.
      started_.fetch_add(1, std::memory_order_release);
      pollfd pfd{stop_fd_, POLLIN, 0};
      // EINTR (a handled signal), a spurious return or a second gone by:
      // look again. The eventfd stays readable once stop() wrote it.
      while (poll(&pfd, 1, 1000) <= 0 || (pfd.revents & POLLIN) == 0) {
      }
    });
  }
  // Acquire pairs with each thread's release increment: its tid is visible.
  try {
    wait_until(Deadline::after(10.0), "the sleeping threads to start",
               [&] { return started_.load(std::memory_order_acquire) >= count; });
  } catch (...) {
    stop();
    close(stop_fd_);
    throw;
  }
}

SleepingThreads::~SleepingThreads() {
  stop();
  close(stop_fd_);
}

void SleepingThreads::stop() noexcept {
  if (threads_.empty()) return;
  const uint64_t one = 1;
  if (write(stop_fd_, &one, sizeof one) != sizeof one) sys::fatal("eventfd write", errno);
  for (auto& t : threads_) t.join();
  threads_.clear();
}

DeliveryCheck check_delivery(int threads, int signo, bool directed, uint64_t timeout_ns) {
  ScopedMask block(SIG_BLOCK, {signo});
  ScopedDisposition handler(signo, &record_receiver);
  g_probe_receiver.store(0, std::memory_order_relaxed);
  SleepingThreads group(threads, signo);
  DeliveryCheck check;
  check.group = group.tids();
  if (directed) {
    check.target = group.tids().back();
    const int rc = sys::tgkill(getpid(), check.target, signo);
    if (rc != 0) sys::throw_errno(-rc, "tgkill");
  } else {
    if (kill(getpid(), signo) != 0) sys::throw_errno("kill");
  }
  const uint64_t deadline = monotonic_ns() + timeout_ns;
  while (monotonic_ns() < deadline) {
    // Acquire pairs with the handler's release store.
    check.receiver = g_probe_receiver.load(std::memory_order_acquire);
    if (check.receiver != 0) break;
    sched_yield();
  }
  group.stop();
  drain_pending(signo);  // nothing arrived: do not leave it pending
  return check;
}

}  // namespace doorbell::lab::costs
