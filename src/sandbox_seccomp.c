/*
 * sandbox_seccomp.c - the sandbox's seccomp filter.
 *
 * Owns the syscall -> errno table and turns it, through libseccomp, into one
 * classic BPF program, prefixed by a few hand-written instructions for
 * personality. sandbox_new asks for it before fork; the child only hands the
 * finished program to prctl, since libseccomp allocates and the child must
 * stay async-signal-safe. The program does not depend on the options, so it
 * is compiled once per process and shared by every session.
 *
 * Default allow; listed calls fail with an errno chosen to look like a kernel
 * or a filesystem without the feature, so that programs fall back quietly;
 * non-native ABIs, i386 and x32 included, kill the process:
 *
 *   ptrace, process_vm_readv/writev,
 *   pidfd_getfd, process_madvise          EPERM   reach into another process
 *   mount, umount2, pivot_root, fsopen,
 *   fsconfig, fsmount, fspick, move_mount,
 *   open_tree, mount_setattr              EPERM   the mount table is fixed
 *   unshare, setns                        EPERM   no new or foreign namespaces
 *   clone with any CLONE_NEW* flag        EPERM   (user ns uts ipc pid net cgroup time)
 *   clone3                                ENOSYS  flags are out of reach of BPF;
 *                                                 glibc falls back to clone
 *   bpf, userfaultfd                      EPERM
 *   perf_event_open                       EACCES  as with perf_event_paranoid
 *   io_uring_setup/enter/register         ENOSYS  as on a kernel without io_uring
 *   keyctl, add_key, request_key          ENOSYS  as on a kernel without keys
 *   name_to_handle_at                     EOPNOTSUPP  as on a filesystem without handles
 *   open_by_handle_at                     EPERM
 *   kexec_load, kexec_file_load,
 *   init/finit/delete_module, reboot,
 *   swapon, swapoff, syslog, acct,
 *   quotactl, quotactl_fd, iopl, ioperm,
 *   modify_ldt                            EPERM
 *   personality other than 0 and the
 *   0xffffffff query                      EPERM   (hand-written prefix: libseccomp
 *                                                 cannot test one argument twice)
 *   ioctl TIOCSTI, TIOCLINUX, TIOCSETD    EPERM   no typing into the terminal, no
 *                                                 line disciplines (low 32 bits
 *                                                 compared, as the kernel does)
 *   socket(AF_VSOCK)                      EAFNOSUPPORT  vsock is not namespaced
 *   chmod, fchmod, fchmodat, fchmodat2,
 *   open, creat, openat, mknod, mknodat
 *   with S_ISUID or S_ISGID in the mode   EPERM   no set-id programs: nosuid
 *                                                 protects the sandbox, not the
 *                                                 host behind a :rw --mount
 *   openat2                               ENOSYS  its mode is out of reach of BPF;
 *                                                 as before Linux 5.6 (glibc and
 *                                                 Python do not use it)
 *
 * (mkdir's S_ISGID is ignored by the kernel, a folder's setgid comes from its
 * parent; a file's S_ISGID that chown or a write would clear is no concern.)
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "sandbox_internal.h"

#include <errno.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <sched.h>
#include <seccomp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080
#endif
#ifndef TIOCLINUX
#define TIOCLINUX 0x541C
#endif

struct sandbox_seccomp_deny {
	const char *name;
	int err;
};

/* clang-format off */
static const struct sandbox_seccomp_deny sandbox_seccomp_deny_table[] = {
	{"ptrace", EPERM}, {"process_vm_readv", EPERM}, {"process_vm_writev", EPERM},
	{"pidfd_getfd", EPERM}, {"process_madvise", EPERM},
	{"mount", EPERM}, {"umount2", EPERM}, {"pivot_root", EPERM}, {"fsopen", EPERM},
	{"fsconfig", EPERM}, {"fsmount", EPERM}, {"fspick", EPERM}, {"move_mount", EPERM},
	{"open_tree", EPERM}, {"mount_setattr", EPERM},
	{"unshare", EPERM}, {"setns", EPERM},
	{"clone3", ENOSYS},
	{"bpf", EPERM}, {"userfaultfd", EPERM}, {"perf_event_open", EACCES},
	{"io_uring_setup", ENOSYS}, {"io_uring_enter", ENOSYS}, {"io_uring_register", ENOSYS},
	{"keyctl", ENOSYS}, {"add_key", ENOSYS}, {"request_key", ENOSYS},
	{"name_to_handle_at", EOPNOTSUPP}, {"open_by_handle_at", EPERM},
	{"kexec_load", EPERM}, {"kexec_file_load", EPERM}, {"init_module", EPERM},
	{"finit_module", EPERM}, {"delete_module", EPERM}, {"reboot", EPERM},
	{"swapon", EPERM}, {"swapoff", EPERM}, {"syslog", EPERM}, {"acct", EPERM},
	{"quotactl", EPERM}, {"quotactl_fd", EPERM},
	{"iopl", EPERM}, {"ioperm", EPERM}, {"modify_ldt", EPERM},
	{"openat2", ENOSYS},
};
/* clang-format on */

static const unsigned long sandbox_seccomp_ns_flags[] = {
	CLONE_NEWUSER, CLONE_NEWNS,  CLONE_NEWPID,    CLONE_NEWNET,
	CLONE_NEWIPC,  CLONE_NEWUTS, CLONE_NEWCGROUP, CLONE_NEWTIME,
};

static const unsigned long sandbox_seccomp_ioctl_deny[] = {TIOCSTI, TIOCLINUX, TIOCSETD};

#ifndef __NR_fchmodat2
#ifdef __x86_64__
#define __NR_fchmodat2 452 /* (Linux 6.6; the same number on every architecture) */
#endif
#endif

/* Calls that set a file's mode, and which argument holds it. */
static const struct {
	const char *name;
	unsigned arg;
} sandbox_seccomp_mode_calls[] = {
	{"chmod", 1}, {"fchmod", 1}, {"fchmodat", 2}, {"fchmodat2", 2}, {"open", 2},
	{"creat", 1}, {"openat", 3}, {"mknod", 1},    {"mknodat", 2},
};

/* The program, built by the first sandbox_seccomp_program and kept for the process. */
static struct {
	pthread_once_t once;
	int rc;
	char err[160];
	struct sock_filter *filter;
	unsigned short len;
} sandbox_seccomp_bpf = {PTHREAD_ONCE_INIT, 0, "", NULL, 0};

static int sandbox_seccomp_rules(scmp_filter_ctx ctx, char *err, size_t errlen)
{
	const size_t ndeny =
		sizeof(sandbox_seccomp_deny_table) / sizeof(sandbox_seccomp_deny_table[0]);
	size_t i;
	int rc;

	for (i = 0; i < ndeny; i++) {
		int nr = seccomp_syscall_resolve_name(sandbox_seccomp_deny_table[i].name);
		if (nr == __NR_SCMP_ERROR)
			continue; /* not a system call of this architecture (iopl on arm64...) */
		rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(sandbox_seccomp_deny_table[i].err), nr,
				      0);
		if (rc < 0)
			goto fail_rule;
	}
	/* clone's flags are its first argument on x86_64 and arm64; only the low 32 bits count. */
	for (i = 0; i < sizeof(sandbox_seccomp_ns_flags) / sizeof(sandbox_seccomp_ns_flags[0]);
	     i++) {
		rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(clone), 1,
				      SCMP_A0(SCMP_CMP_MASKED_EQ, sandbox_seccomp_ns_flags[i],
					      sandbox_seccomp_ns_flags[i]));
		if (rc < 0)
			goto fail_clone;
	}
	/* The kernel reads ioctl's request and socket's family as 32-bit values, so compare
	 * only the low half: SCMP_A1_32 in libseccomp 2.5 still demands a zero high half. */
	for (i = 0; i < sizeof(sandbox_seccomp_ioctl_deny) / sizeof(sandbox_seccomp_ioctl_deny[0]);
	     i++) {
		rc = seccomp_rule_add(
			ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(ioctl), 1,
			SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffUL, sandbox_seccomp_ioctl_deny[i]));
		if (rc < 0)
			goto fail_ioctl;
	}
	/* A set-uid or set-gid mode, whatever else is in it. */
	for (i = 0; i < sizeof(sandbox_seccomp_mode_calls) / sizeof(sandbox_seccomp_mode_calls[0]);
	     i++) {
		static const unsigned long bits[] = {S_ISUID, S_ISGID};
		int nr = seccomp_syscall_resolve_name(sandbox_seccomp_mode_calls[i].name);
#ifdef __NR_fchmodat2
		if (nr == __NR_SCMP_ERROR &&
		    strcmp(sandbox_seccomp_mode_calls[i].name, "fchmodat2") == 0)
			nr = __NR_fchmodat2; /* (a libseccomp older than the call) */
#endif
		if (nr == __NR_SCMP_ERROR)
			continue; /* (chmod, open... are not arm64's) */
		for (int b = 0; b < 2; b++) {
			struct scmp_arg_cmp cmp = {sandbox_seccomp_mode_calls[i].arg,
						   SCMP_CMP_MASKED_EQ, bits[b], bits[b]};
			rc = seccomp_rule_add_array(ctx, SCMP_ACT_ERRNO(EPERM), nr, 1, &cmp);
			if (rc < 0) {
				sandbox_errf(err, errlen, "seccomp rule %s(set-id mode): %s",
					     sandbox_seccomp_mode_calls[i].name, strerror(-rc));
				return rc;
			}
		}
	}
	rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EAFNOSUPPORT), SCMP_SYS(socket), 1,
			      SCMP_A0(SCMP_CMP_MASKED_EQ, 0xffffffffUL, AF_VSOCK));
	if (rc < 0) {
		sandbox_errf(err, errlen, "seccomp rule socket(AF_VSOCK): %s", strerror(-rc));
		return rc;
	}
	return 0;
fail_rule:
	sandbox_errf(err, errlen, "seccomp rule %s: %s", sandbox_seccomp_deny_table[i].name,
		     strerror(-rc));
	return rc;
fail_clone:
	sandbox_errf(err, errlen, "seccomp rule clone(0x%lx): %s", sandbox_seccomp_ns_flags[i],
		     strerror(-rc));
	return rc;
fail_ioctl:
	sandbox_errf(err, errlen, "seccomp rule ioctl(0x%lx): %s", sandbox_seccomp_ioctl_deny[i],
		     strerror(-rc));
	return rc;
}

/* personality is allowed only as 0 (PER_LINUX) and the 0xffffffff query. libseccomp
 * cannot put two tests on one argument, so these few instructions run first, on the
 * native architecture only; everything else falls through to libseccomp's program,
 * which kills foreign architectures (i386, x32). */
static unsigned short sandbox_seccomp_prefix(struct sock_filter *f)
{
	const uint32_t arch = (uint32_t)seccomp_arch_native();
	const uint32_t nr = (uint32_t)seccomp_syscall_resolve_name("personality");
	const uint32_t arg0 = (uint32_t)offsetof(struct seccomp_data, args[0]) +
			      (__BYTE_ORDER__ == __ORDER_BIG_ENDIAN__ ? 4 : 0);
	struct sock_filter p[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, arch, 0, 7),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, nr, 0, 5),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, arg0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 2, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0xffffffffu, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA)),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};

	memcpy(f, p, sizeof(p));
	return (unsigned short)(sizeof(p) / sizeof(p[0]));
}

/* Compiles the rules, exports libseccomp's BPF through a memfd and appends it to
 * the prefix. Runs once (pthread_once); the outcome stays in sandbox_seccomp_bpf. */
static void sandbox_seccomp_build(void)
{
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
	char *err = sandbox_seccomp_bpf.err;
	const size_t errlen = sizeof(sandbox_seccomp_bpf.err);
	struct sock_filter *f = NULL;
	off_t size = 0;
	int fd = -1;
	int rc;

	if (!ctx) {
		rc = -ENOMEM;
		snprintf(err, errlen, "seccomp_init: %s", strerror(-rc));
		goto fail;
	}
	rc = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
	if (rc == 0)
		rc = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_OPTIMIZE, 2);
	if (rc < 0) {
		snprintf(err, errlen, "seccomp_attr_set: %s", strerror(-rc));
		goto fail;
	}
	rc = sandbox_seccomp_rules(ctx, err, errlen);
	if (rc < 0)
		goto fail;
	fd = memfd_create("ptybox-seccomp", MFD_CLOEXEC);
	if (fd < 0) {
		rc = -errno;
		snprintf(err, errlen, "memfd_create: %s", strerror(-rc));
		goto fail;
	}
	rc = seccomp_export_bpf(ctx, fd);
	if (rc < 0 || (size = lseek(fd, 0, SEEK_END)) <= 0 || size % (off_t)sizeof(*f) ||
	    size / (off_t)sizeof(*f) > BPF_MAXINSNS - 16) {
		rc = rc < 0 ? rc : -EINVAL;
		snprintf(err, errlen, "seccomp_export_bpf: %s", strerror(-rc));
		goto fail;
	}
	f = malloc(16 * sizeof(*f) + (size_t)size);
	if (!f) {
		rc = -ENOMEM;
		snprintf(err, errlen, "seccomp program: %s", strerror(-rc));
		goto fail;
	}
	sandbox_seccomp_bpf.len = sandbox_seccomp_prefix(f);
	if (pread(fd, f + sandbox_seccomp_bpf.len, (size_t)size, 0) != (ssize_t)size) {
		rc = -EIO;
		snprintf(err, errlen, "seccomp program: short read");
		goto fail;
	}
	sandbox_seccomp_bpf.len += (unsigned short)(size / (off_t)sizeof(*f));
	sandbox_seccomp_bpf.filter = f;
	close(fd);
	seccomp_release(ctx);
	return;
fail:
	free(f);
	if (fd >= 0)
		close(fd);
	if (ctx)
		seccomp_release(ctx);
	sandbox_seccomp_bpf.len = 0;
	sandbox_seccomp_bpf.rc = rc;
}

int sandbox_seccomp_program(struct sock_fprog *prog, char *err, size_t errlen)
{
	pthread_once(&sandbox_seccomp_bpf.once, sandbox_seccomp_build);
	if (sandbox_seccomp_bpf.rc < 0) {
		sandbox_errf(err, errlen, "%s", sandbox_seccomp_bpf.err);
		return sandbox_seccomp_bpf.rc;
	}
	prog->len = sandbox_seccomp_bpf.len;
	prog->filter = sandbox_seccomp_bpf.filter;
	return 0;
}
