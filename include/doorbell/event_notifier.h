// EventNotifier: a pollable wake-up over eventfd(2) that writes the eventfd
// only when the consumer has said it is about to sleep.
//
// One consumer thread, any number of notifying threads (or signal handlers).
// The consumer polls fd() with whatever it sleeps in (epoll, poll, io_uring,
// libuv, Asio). A plain eventfd costs every notifier a write(2); here a
// notifier pays the syscall only when the consumer is armed, that is, has
// declared that it is about to sleep and has not yet consumed.
//
// The consumer's cycle:
//
//   if (notifier.arm()) {          // "I am about to sleep"
//     poll/epoll_wait(..., notifier.fd(), ...);
//   }
//   if (notifier.consume(fd_was_reported_readable)) { ...look for work... }
//
// States (one 32-bit atomic word, two bits):
//
//   armed    the consumer is (about to be) asleep on fd()
//   pending  a notify() happened since the last consume()
//
//   notify():  sets pending; writes fd() only on the transition
//              {armed, not pending} -> {armed, pending}.
//   arm():     sets armed; returns false when pending was already set (do
//              not sleep: there is work, and nobody will write the fd).
//   consume(): clears both; returns whether pending was set.
//
// Coalescing: notifications merge. Many notify() calls between two consume()
// calls give one `true` from consume() and at most one eventfd write. The
// contract is "at least one wake-up after the last notify()", not one per
// notify(). The caller keeps its own queue or counters for the events.
//
// Spurious readiness: a notifier that saw the armed state may write the
// eventfd just after the consumer consumed (it was preempted between its
// atomic and its write). fd() then polls readable once more with nothing
// pending; consume(true) drains it. So: whenever your poller reports fd()
// readable, call consume(true); otherwise call consume(false), which reads
// the eventfd only when the state says a write happened or is on its way.
//
// Memory ordering: notify() is a release and consume() an acquire on the
// state word, so whatever a notifier wrote before notify() is visible to the
// consumer after the consume() that returns true.
//
// Async-signal-safety: notify() is async-signal-safe (one atomic RMW and
// possibly write(2); errno is saved and restored). The other members are not
// meant for handlers.
//
// Threads and processes: for threads of one process. The state word lives in
// the object, so it does not work across processes (use Bell for that).
// After fork() the child has a copy of the state and shares the eventfd with
// the parent: do not use the notifier in both.
//
// Lifetime: the object must outlive every notify() call in flight.
#pragma once

#include <atomic>
#include <cstdint>

namespace doorbell {

class EventNotifier {
 public:
  // Creates the eventfd (EFD_NONBLOCK | EFD_CLOEXEC). Throws std::system_error
  // when eventfd(2) fails (EMFILE, ENFILE, ENOMEM).
  EventNotifier();
  ~EventNotifier();
  EventNotifier(const EventNotifier&) = delete;
  EventNotifier& operator=(const EventNotifier&) = delete;

  // The eventfd to poll for readability (EPOLLIN). Owned by the notifier.
  int fd() const noexcept { return fd_; }

  // Any thread, and signal handlers. Marks a notification pending and, when
  // the consumer is armed and nothing was pending, writes the eventfd.
  // Never blocks (the eventfd is non-blocking and its counter saturates
  // only after 2^64-2 unread writes, which the handshake makes impossible).
  void notify() noexcept;

  // Consumer only. Declares that the consumer is about to sleep on fd().
  // Returns true when it may sleep; false when a notification is already
  // pending (then call consume() and do not sleep).
  bool arm() noexcept;

  // Consumer only. Clears the armed and pending states and returns whether a
  // notification was pending. Drains the eventfd when fd_readable is true or
  // when the state shows that a notifier wrote it.
  bool consume(bool fd_readable = true) noexcept;

  // Convenience for a consumer with nothing else to poll: sleeps in poll(2)
  // on fd() until a notification is pending or timeout_ms passes (-1, or
  // any negative: no limit). Returns consume()'s result. Retries EINTR with the time left
  // until the deadline (now + timeout_ms at the call), and sleeps on after a
  // stale readiness (see "Spurious readiness") until that deadline.
  bool wait(int timeout_ms = -1) noexcept;

 private:
  static constexpr uint32_t kArmed = 1;
  static constexpr uint32_t kPending = 2;
  std::atomic<uint32_t> state_{0};
  int fd_ = -1;
};

}  // namespace doorbell
