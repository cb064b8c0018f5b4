// Probes for the "why signals cost what they cost" scenarios (groups
// siglock, fpu, queueing, directed, timers) and their tests.
//
// tests/costs_test.cpp checks the very functions the scenarios call, so a
// test failure means a scenario measures the wrong thing.
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
//    not touch them, and glibc's EVEX string functions dirty them). Calling
//    these out of line is safe for the same reason: code built without AVX
//    (legacy SSE) leaves the upper halves and XINUSE as they are;
//  - the RLIMIT_SIGPENDING probe: in a forked child, lower the limit and
//    sigqueue() real-time signals to itself (blocked) until the kernel says
//    EAGAIN; the count and the per-send times come back through shared memory;
//  - the thread-directed delivery check: tgkill() to one named thread of a
//    group of sleeping threads, and which thread ran the handler;
//  - ScopedRealItimer, which restores ITIMER_REAL. The disposition, mask and
//    pending-signal scopes are lab/common/signal_scope.h.
//
// Nothing here changes process-wide state without a guard that restores it.
#pragma once

#include <signal.h>
#include <sys/time.h>
#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

namespace doorbell::lab::costs {

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
  std::string why_not_avx2() const;
  std::string why_not_avx512() const;
  std::string why_not_xinuse() const;
};

VectorSupport probe_vector_support() noexcept;

// XINUSE of the calling thread. Only where probe_vector_support().xgetbv1.
// Async-signal-safe.
uint64_t xinuse() noexcept;

enum class VectorState { clean, avx2, avx512 };

const char* vector_state_name(VectorState s) noexcept;

// The XINUSE bits a state claims to set (clean: none of kXstateManaged).
uint64_t vector_state_bits(VectorState s) noexcept;

// Resets the components in `mask` (limited to XCR0 and kXstateManaged) to
// their initial configuration: XRSTOR from a standard-format area whose
// XSTATE_BV is 0. MXCSR is loaded from the area when AVX is requested, so the
// area carries the current MXCSR (a zero MXCSR would unmask every FP
// exception). Requires support.xrstor_usable().
void reset_vector_components(const VectorSupport& support, uint64_t mask) noexcept;

// Puts the calling thread's vector state into `state`:
//  clean:  AVX and AVX-512 components reset to their initial configuration;
//  avx2:   clean, then YMM8 all ones (YMM_Hi128 in use);
//  avx512: clean, then YMM8 all ones, ZMM8 all ones (ZMM_Hi256), ZMM16 all
//          ones (Hi16_ZMM) and k1 all ones (opmask).
// Returns false (and does nothing) where the state is not usable here.
// Inline assembly only: see the banner for why there is no target attribute.
bool set_vector_state(const VectorSupport& support, VectorState state) noexcept;

// One self-signal with the vector state set: set the state, read XINUSE,
// tgkill(self) (the handler runs before the call returns), read XINUSE again.
// Between the state change and the reads sits no code built for AVX (the
// send is glibc's syscall(), which touches no vector register), so the
// readings show what the kernel saw and restored. The fpu scenario's sample
// is this sequence with the interval clock read around the send. xinuse
// fields are 0 where the CPU does not report XINUSE.
struct SelfSignalRoundTrip {
  bool state_set = false;
  uint64_t xinuse_before = 0;  // masked with kXstateManaged
  uint64_t xinuse_after = 0;
  int rc = 0;  // sys::tgkill: 0 or -errno
};
SelfSignalRoundTrip self_signal_round_trip(const VectorSupport& support, VectorState state,
                                           int signo) noexcept;

// Dirties AVX-512 state from inside a signal handler (async-signal-safe: a
// few register writes). Only call where support.avx512_usable().
void touch_avx512_in_handler() noexcept;

// getauxval(AT_MINSIGSTKSZ): the kernel's own estimate of the signal frame,
// which grows with the enabled XSAVE state (about 2.7 KB with AVX-512).
// 0 where the kernel does not say (before Linux 5.14 on x86).
long min_signal_stack_size() noexcept;

// ------------------------------------------------------------------- guards

// Saves ITIMER_REAL on construction and puts it back on destruction (a
// disarmed timer stays disarmed). Throws std::system_error when getitimer
// fails.
class ScopedRealItimer {
 public:
  ScopedRealItimer();
  ~ScopedRealItimer();
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
SigpendingProbeResult probe_sigpending_limit(long limit, int signo, long extra_attempts = 1024);

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
  SleepingThreads(int count, int signo);
  ~SleepingThreads();
  SleepingThreads(const SleepingThreads&) = delete;
  SleepingThreads& operator=(const SleepingThreads&) = delete;

  const std::vector<pid_t>& tids() const noexcept { return tids_; }

  void stop() noexcept;

 private:
  int stop_fd_ = -1;
  std::atomic<int> started_{0};
  std::vector<pid_t> tids_;
  std::vector<std::thread> threads_;
};

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
DeliveryCheck check_delivery(int threads, int signo, bool directed,
                             uint64_t timeout_ns = 2000000000u);

}  // namespace doorbell::lab::costs
