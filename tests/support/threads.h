// The threads of the test's own process, as the kernel lists them.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <set>

namespace doorbell::test {

// The thread IDs in /proc/self/task.
std::set<pid_t> thread_ids();

// Starts what a sanitizer's runtime starts with a process's first thread
// (ThreadSanitizer's background thread; a forked child starts its own) by
// making and joining one thread, and waits until that thread is unlisted,
// so that threads counted afterwards are the code under test's.
void start_runtime_threads();

// Waits until this process's threads are `expected` or `limit` has passed;
// returns the threads then. A joined thread stays listed a moment after
// join() returns: the C library is woken when the kernel clears the
// thread's ID word, before the kernel unlists it (seen under
// ThreadSanitizer: 2 of 2,000 fresh threads still listed after the join).
std::set<pid_t> threads_settled_to(const std::set<pid_t>& expected,
                                   std::chrono::milliseconds limit = std::chrono::seconds(2));

}  // namespace doorbell::test
