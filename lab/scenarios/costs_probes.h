// Probes and helpers for the "why signals cost what they cost" scenarios
// (groups siglock, fpu, queueing, directed, timers) and their tests.
//
// Header-only on purpose: tests/costs_test.cpp checks the very functions the
// scenarios call, so a test failure means a scenario measures the wrong thing.
//
// What is here:
//  - the vector-state probe: CPUID (XSAVE, OSXSAVE, AVX2, AVX-512F, XGETBV
//    with ECX=1), XCR0 via xgetbv(0), and XINUSE via xgetbv(1): the state
//    components the processor currently tracks as not in their initial
//    configuration. The kernel's signal frame (XSAVE to the user stack) and
//    sigreturn (XRSTOR) work on exactly these components;
//  - set_vector_state(): puts the calling thread's AVX and AVX-512 state into
//    the claimed configuration with inline assembly only (no -mavx flags: a
//    function compiled for AVX gets a compiler-inserted VZEROUPPER on the way
//    out, which would undo the dirtying). "clean" resets the components to
//    their initial configuration with a user-mode XRSTOR whose header says
//    "not present", which is the only way to clear ZMM16-31 (VZEROUPPER does
//    not touch them, and glibc's EVEX string functions dirty them);
//  - the RLIMIT_SIGPENDING probe: in a forked child, lower the limit and
//    sigqueue() real-time signals to itself (blocked) until the kernel says
//    EAGAIN; the count and the per-send times come back through shared memory;
//  - the thread-directed delivery check: tgkill() to one named thread of a
//    group of sleeping threads, and which thread ran the handler;
//  - RAII guards that restore a disposition, a thread's mask, an itimer or a
//    resource limit on every path.
//
// Nothing here changes process-wide state without a guard that restores it.
#pragma once

#include <elf.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/auxv.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "sys/error.h"

namespace doorbell::lab::costs {

// ------------------------------------------------------------------ clocks

inline uint64_t now_ns(clockid_t clock = CLOCK_MONOTONIC) noexcept {
  timespec ts;
  clock_gettime(clock, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
}

inline pid_t gettid_raw() noexcept {
  return static_cast<pid_t>(syscall(SYS_gettid));
}

inline int tgkill_raw(pid_t tgid, pid_t tid, int signo) noexcept {
  return static_cast<int>(syscall(SYS_tgkill, tgid, tid, signo));
}

// ------------------------------------------------------------ vector state

// XSAVE state components (Intel SDM vol. 1, 13.1), as bits of XCR0/XINUSE.
inline constexpr uint64_t kXstateSse = 1u << 1;       // XMM0-15, MXCSR
inline constexpr uint64_t kXstateAvx = 1u << 2;       // YMM_Hi128: bits 128-255 of YMM0-15
inline constexpr uint64_t kXstateOpmask = 1u << 5;    // k0-k7
inline constexpr uint64_t kXstateZmmHi256 = 1u << 6;  // bits 256-511 of ZMM0-15
inline constexpr uint64_t kXstateHi16Zmm = 1u << 7;   // ZMM16-31
inline constexpr uint64_t kXstateAvx512 = kXstateOpmask | kXstateZmmHi256 | kXstateHi16Zmm;
// The components set_vector_state() manages.
inline constexpr uint64_t kXstateManaged = kXstateAvx | kXstateAvx512;

struct VectorSupport {
  bool x86_64 = false;
  bool xsave = false;             // CPUID.1:ECX.XSAVE
  bool osxsave = false;           // CPUID.1:ECX.OSXSAVE: the kernel enabled XSAVE (XGETBV usable)
  bool avx2 = false;              // CPUID.7.0:EBX.AVX2
  bool avx512f = false;           // CPUID.7.0:EBX.AVX512F
  bool xgetbv1 = false;           // CPUID.(0xD,1):EAX bit 2: XGETBV with ECX=1 returns XINUSE
  uint64_t xcr0 = 0;              // the components the kernel enabled
  uint32_t xsave_area_bytes = 0;  // CPUID.(0xD,0):EBX: XSAVE area size for the XCR0 features

  bool xrstor_usable() const noexcept { return osxsave; }
  bool avx2_usable() const noexcept { return osxsave && avx2 && (xcr0 & 0x6) == 0x6; }
  bool avx512_usable() const noexcept { return avx2_usable() && avx512f && (xcr0 & 0xe6) == 0xe6; }

  // Empty when usable; otherwise the reason, in words.
  std::string why_not_avx2() const {
    if (!x86_64) return "not an x86-64 machine";
    if (!xsave) return "the CPU has no XSAVE";
    if (!osxsave) return "the kernel did not enable XSAVE (CPUID OSXSAVE clear)";
    if (!avx2) return "the CPU has no AVX2";
    if ((xcr0 & 0x6) != 0x6) return "the kernel did not enable AVX state in XCR0";
    return {};
  }
  std::string why_not_avx512() const {
    std::string why = why_not_avx2();
    if (!why.empty()) return why;
    if (!avx512f) return "the CPU has no AVX-512F";
    if ((xcr0 & 0xe6) != 0xe6) return "the kernel did not enable AVX-512 state in XCR0";
    return {};
  }
  std::string why_not_xinuse() const {
    if (!x86_64) return "not an x86-64 machine";
    if (!osxsave) return "XSAVE is not enabled by the kernel";
    if (!xgetbv1) return "the CPU does not report XINUSE (no XGETBV with ECX=1)";
    return {};
  }
};

inline uint64_t xgetbv_raw(uint32_t index) noexcept {
#if defined(__x86_64__)
  uint32_t lo = 0, hi = 0;
  asm volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(index));
  return (static_cast<uint64_t>(hi) << 32) | lo;
#else
  (void)index;
  return 0;
#endif
}

inline VectorSupport probe_vector_support() noexcept {
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

// XINUSE of the calling thread. Only where probe_vector_support().xgetbv1.
inline uint64_t xinuse() noexcept {
  return xgetbv_raw(1);
}

enum class VectorState { clean, avx2, avx512 };

inline const char* vector_state_name(VectorState s) noexcept {
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

// The XINUSE bits a state claims to set (clean: none of kXstateManaged).
inline uint64_t vector_state_bits(VectorState s) noexcept {
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

// Resets the components in `mask` (limited to XCR0 and kXstateManaged) to
// their initial configuration: XRSTOR from a standard-format area whose
// XSTATE_BV is 0. MXCSR is loaded from the area when AVX is requested, so the
// area carries the current MXCSR (a zero MXCSR would unmask every FP
// exception). Requires support.xrstor_usable().
inline void reset_vector_components(const VectorSupport& support, uint64_t mask) noexcept {
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

// Puts the calling thread's vector state into `state`:
//  clean:  AVX and AVX-512 components reset to their initial configuration;
//  avx2:   clean, then YMM8 all ones (YMM_Hi128 in use);
//  avx512: clean, then YMM8 all ones, ZMM8 all ones (ZMM_Hi256), ZMM16 all
//          ones (Hi16_ZMM) and k1 all ones (opmask).
// Returns false (and does nothing) where the state is not usable here.
// Inline assembly only: see the banner for why there is no target attribute.
inline bool set_vector_state(const VectorSupport& support, VectorState state) noexcept {
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

// One self-signal with the vector state set: set the state, read XINUSE,
// tgkill(self) (the handler runs before the call returns), read XINUSE again.
// No library call sits between the state change and the reads (the raw
// syscall is glibc's syscall(), which touches no vector register), so the
// readings show what the kernel saw and restored. The fpu scenario times the
// same sequence. xinuse fields are 0 where the CPU does not report XINUSE.
struct SelfSignalRoundTrip {
  bool state_set = false;
  uint64_t xinuse_before = 0;  // masked with kXstateManaged
  uint64_t xinuse_after = 0;
  int rc = 0;
};
inline SelfSignalRoundTrip self_signal_round_trip(const VectorSupport& support, VectorState state,
                                                  int signo) noexcept {
  SelfSignalRoundTrip r;
  const pid_t pid = getpid();
  const pid_t tid = gettid_raw();
  r.state_set = set_vector_state(support, state);
  if (support.xgetbv1) r.xinuse_before = xinuse() & kXstateManaged;
  r.rc = tgkill_raw(pid, tid, signo);
  if (support.xgetbv1) r.xinuse_after = xinuse() & kXstateManaged;
  return r;
}

// Dirties AVX-512 state from inside a signal handler (async-signal-safe: a
// few register writes). Only call where support.avx512_usable().
inline void touch_avx512_in_handler() noexcept {
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

// getauxval(AT_MINSIGSTKSZ): the kernel's own estimate of the signal frame,
// which grows with the enabled XSAVE state (about 2.7 KB with AVX-512).
// 0 where the kernel does not say (before Linux 5.14 on x86).
inline long min_signal_stack_size() noexcept {
#if defined(AT_MINSIGSTKSZ)
  return static_cast<long>(getauxval(AT_MINSIGSTKSZ));
#else
  return 0;
#endif
}

// ------------------------------------------------------------------- guards

// Takes every pending instance of signo (which the caller blocks) without
// running a handler, so that restoring a disposition cannot run a default
// action on a leftover. Returns how many were taken.
inline long drain_pending(int signo) noexcept {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, signo);
  const timespec zero{0, 0};
  long taken = 0;
  for (;;) {
    const int rc = sigtimedwait(&set, nullptr, &zero);
    if (rc == signo) {
      ++taken;
      continue;
    }
    if (rc < 0 && errno == EINTR) continue;
    return taken;
  }
}

// Installs a handler for signo and puts the previous disposition back on
// destruction. Throws std::system_error when sigaction fails.
class ScopedHandler {
 public:
  ScopedHandler(int signo, void (*handler)(int, siginfo_t*, void*), int flags = SA_RESTART)
      : signo_(signo) {
    struct sigaction sa;
    std::memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = handler;
    sa.sa_flags = SA_SIGINFO | flags;
    sigemptyset(&sa.sa_mask);
    if (sigaction(signo, &sa, &old_) != 0) sys::throw_errno("sigaction");
  }
  ~ScopedHandler() { sigaction(signo_, &old_, nullptr); }
  ScopedHandler(const ScopedHandler&) = delete;
  ScopedHandler& operator=(const ScopedHandler&) = delete;

 private:
  int signo_;
  struct sigaction old_;
};

// Changes the calling thread's mask (SIG_BLOCK / SIG_UNBLOCK / SIG_SETMASK)
// and restores the previous mask on destruction, on the same thread.
class ScopedThreadMask {
 public:
  ScopedThreadMask(int how, std::initializer_list<int> signals) {
    sigset_t set;
    sigemptyset(&set);
    for (int s : signals) sigaddset(&set, s);
    const int rc = pthread_sigmask(how, &set, &old_);
    if (rc != 0) sys::throw_errno(rc, "pthread_sigmask");
  }
  ~ScopedThreadMask() { pthread_sigmask(SIG_SETMASK, &old_, nullptr); }
  ScopedThreadMask(const ScopedThreadMask&) = delete;
  ScopedThreadMask& operator=(const ScopedThreadMask&) = delete;

 private:
  sigset_t old_;
};

// Saves ITIMER_REAL on construction and puts it back on destruction (a
// disarmed timer stays disarmed).
class ScopedRealItimer {
 public:
  ScopedRealItimer() {
    if (getitimer(ITIMER_REAL, &old_) != 0) sys::throw_errno("getitimer");
  }
  ~ScopedRealItimer() { setitimer(ITIMER_REAL, &old_, nullptr); }
  ScopedRealItimer(const ScopedRealItimer&) = delete;
  ScopedRealItimer& operator=(const ScopedRealItimer&) = delete;

 private:
  itimerval old_;
};

// --------------------------------------------------- RLIMIT_SIGPENDING probe

// What the child saw. Sends are sigqueue() of one blocked real-time signal to
// itself; a standard kill() would not do: the kernel overrides the limit for
// SI_USER senders.
struct SigpendingProbeResult {
  bool child_ran = false;         // the child reported back
  long limit = 0;                 // RLIMIT_SIGPENDING the child set (soft = hard)
  long queued = 0;                // sends that succeeded before the first failure
  int failure_errno = 0;          // errno of the first failing send (EAGAIN expected); 0: none
  long attempts = 0;              // sends tried
  std::vector<uint32_t> send_ns;  // time of each successful send, CLOCK_MONOTONIC ns
  uint32_t failed_send_ns = 0;    // time of the failing send
  std::string error;              // set when the probe itself could not run
};

// Forks a child that sets RLIMIT_SIGPENDING to `limit`, blocks `signo` (a
// real-time signal) and sigqueue()s it to itself until a send fails or
// limit + extra_attempts sends were tried. The limit is per user: signals
// already queued by other processes of the same user count too, so `queued`
// can come out below `limit`. The parent's limit, mask and dispositions are
// untouched. Throws std::invalid_argument for a limit outside 1..65536 or a
// non-RT signal.
inline SigpendingProbeResult probe_sigpending_limit(long limit, int signo,
                                                    long extra_attempts = 1024) {
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
      const uint64_t t0 = now_ns();
      const int rc = sigqueue(self, signo, value);
      const uint64_t t1 = now_ns();
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
  int status = 0;
  pid_t w;
  do {
    w = waitpid(child, &status, 0);
  } while (w < 0 && errno == EINTR);
  if (__atomic_load_n(&shared->done, __ATOMIC_ACQUIRE) == 1u) {
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

// A group of threads that sleep in poll() on an eventfd with `signo`
// unblocked, so a signal may be delivered to any of them. The creating thread
// is not one of them. stop() (or the destructor) makes the eventfd readable,
// which wakes them all, and joins them.
// Why poll and not a futex: ThreadSanitizer runs a handler at once only
// while the thread is in a call it intercepts as blocking (poll is one); in a
// raw futex wait the handler would wait until the group stops. The kernel's
// wake-up path (signal_wake_up, try_to_wake_up) is the same for both.
class SleepingThreads {
 public:
  SleepingThreads(int count, int signo) {
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
        __atomic_store_n(&tids_[static_cast<std::size_t>(i)], gettid_raw(), __ATOMIC_RELAXED);
        // Release: the creator reads the tid after started_ reaches count.
        started_.fetch_add(1, std::memory_order_release);
        pollfd pfd{stop_fd_, POLLIN, 0};
        // EINTR (a handled signal) or a spurious return: wait again.
        while (poll(&pfd, 1, -1) <= 0 || (pfd.revents & POLLIN) == 0) {
        }
      });
    }
    // Acquire pairs with each thread's release increment: its tid is visible.
    while (started_.load(std::memory_order_acquire) < count) sched_yield();
  }
  ~SleepingThreads() {
    stop();
    close(stop_fd_);
  }
  SleepingThreads(const SleepingThreads&) = delete;
  SleepingThreads& operator=(const SleepingThreads&) = delete;

  const std::vector<pid_t>& tids() const noexcept { return tids_; }

  void stop() noexcept {
    if (threads_.empty()) return;
    const uint64_t one = 1;
    if (write(stop_fd_, &one, sizeof one) != sizeof one) sys::fatal("eventfd write", errno);
    for (auto& t : threads_) t.join();
    threads_.clear();
  }

 private:
  int stop_fd_ = -1;
  std::atomic<int> started_{0};
  std::vector<pid_t> tids_;
  std::vector<std::thread> threads_;
};

namespace detail {
inline std::atomic<pid_t> g_probe_receiver{0};
inline void record_receiver(int, siginfo_t*, void*) {
  g_probe_receiver.store(gettid_raw(), std::memory_order_release);
}
}  // namespace detail

// Sends signo once to a process of `threads` sleeping threads (plus the
// caller, which blocks it) and reports which thread ran the handler.
// directed = true: tgkill to the last thread; false: kill(getpid()).
// Restores the disposition and the caller's mask. Throws std::system_error on
// set-up failure; receiver is 0 when nothing arrived within `timeout_ns`.
struct DeliveryCheck {
  pid_t target = 0;    // the named thread (directed), else 0
  pid_t receiver = 0;  // the thread whose handler ran
  std::vector<pid_t> group;
};
inline DeliveryCheck check_delivery(int threads, int signo, bool directed,
                                    uint64_t timeout_ns = 2000000000u) {
  ScopedThreadMask block(SIG_BLOCK, {signo});
  ScopedHandler handler(signo, &detail::record_receiver);
  detail::g_probe_receiver.store(0, std::memory_order_relaxed);
  SleepingThreads group(threads, signo);
  DeliveryCheck check;
  check.group = group.tids();
  if (directed) {
    check.target = group.tids().back();
    if (tgkill_raw(getpid(), check.target, signo) != 0) sys::throw_errno("tgkill");
  } else {
    if (kill(getpid(), signo) != 0) sys::throw_errno("kill");
  }
  const uint64_t deadline = now_ns() + timeout_ns;
  while (now_ns() < deadline) {
    // Acquire pairs with the handler's release store.
    check.receiver = detail::g_probe_receiver.load(std::memory_order_acquire);
    if (check.receiver != 0) break;
    sched_yield();
  }
  group.stop();
  drain_pending(signo);  // nothing arrived: do not leave it pending
  return check;
}

}  // namespace doorbell::lab::costs
