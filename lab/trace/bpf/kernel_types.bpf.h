/* The few kernel types signals.bpf.c reads, declared by hand for CO-RE.
 *
 * Why not a vmlinux.h generated at build time: that needs the build
 * machine's /sys/kernel/btf/vmlinux, which a clean clone on a fresh Debian 12
 * machine, a CI container or a chroot may not have, and it would bind the
 * build to one kernel's 135,000-line header. CO-RE does not need it: every
 * struct below carries preserve_access_index, so clang records each field
 * access by name, and libbpf rewrites the offsets at load time against the
 * running kernel's BTF (/sys/kernel/btf/vmlinux). A field missing from the
 * running kernel fails the load with the field's name, and the trace falls
 * back to tracefs saying so. Only the members used are declared; their order
 * and the struct sizes do not matter, their names and kinds do.
 *
 * This list is also the complete statement of what the programs depend on
 * in the kernel. */
#ifndef DOORBELL_LAB_TRACE_BPF_KERNEL_TYPES_BPF_H
#define DOORBELL_LAB_TRACE_BPF_KERNEL_TYPES_BPF_H

#include <linux/bpf.h>
#include <linux/types.h>

typedef __u8 u8;
typedef __u16 u16;
typedef __u32 u32;
typedef __u64 u64;
typedef __s32 s32;
typedef __s64 s64;
typedef _Bool bool;
#define true 1
#define false 0

#define PF_EXITING 0x00000004

#pragma clang attribute push(__attribute__((preserve_access_index)), apply_to = record)

struct list_head {
  struct list_head* next;
  struct list_head* prev;
};

typedef struct {
  unsigned long sig[1]; /* 64-bit architectures: one word holds signals 1..64 */
} sigset_t;

typedef struct {
  int counter;
} atomic_t;

struct sigpending {
  struct list_head list;
  sigset_t signal;
};

struct task_struct;

struct signal_struct {
  atomic_t live;                       /* threads not yet exited */
  int group_exit_code;                 /* a fatal signal's number, or an exit status << 8 */
  struct task_struct* group_exec_task; /* the thread in execve killing the others (5.19+;
                                          checked with bpf_core_field_exists) */
  struct list_head thread_head;        /* the threads, through task_struct.thread_node */
  struct sigpending shared_pending;
};

struct qstr {
  const unsigned char* name;
};

struct dentry {
  struct qstr d_name;
};

struct path {
  struct dentry* dentry;
};

struct file {
  struct path f_path;
};

struct fdtable {
  unsigned int max_fds;
  struct file** fd;
};

struct files_struct {
  struct fdtable* fdt;
};

struct thread_info {
  u32 cpu; /* the CPU it runs or waits on (here since Linux 5.16 on x86-64 and arm64) */
};

struct task_struct {
  struct thread_info thread_info;
  unsigned int __state; /* "state" (a long) before Linux 5.14: task_struct___pre_5_14 */
  unsigned int flags;
  int on_cpu; /* 1 while it is on a CPU */
  int pid;
  int tgid;
  struct task_struct* group_leader;
  struct list_head thread_node;
  u64 start_boottime; /* ns since boot; an exec from another thread copies the leader's */
  char comm[16];
  struct files_struct* files;
  struct signal_struct* signal;
  sigset_t blocked;
  struct sigpending pending;
};

struct task_struct___pre_5_14 {
  long state;
};

struct task_struct___pre_5_16 {
  unsigned int cpu;
};

#if defined(__TARGET_ARCH_x86)
struct pt_regs {
  unsigned long di;      /* first argument, unchanged at syscall exit */
  unsigned long si;      /* second argument */
  unsigned long orig_ax; /* the system call number */
};
#elif defined(__TARGET_ARCH_arm64)
struct pt_regs {
  u64 regs[31]; /* regs[0] holds the return value at exit: the first argument is orig_x0 */
  u64 orig_x0;
  s32 syscallno;
};
#else
#error "signals.bpf.c knows the system call registers of x86-64 and arm64 only"
#endif

#pragma clang attribute pop

struct kernel_siginfo;
struct k_sigaction;

#endif
