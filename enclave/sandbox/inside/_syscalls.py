"""System call numbers by name for the seccomp filter (x86-64 and AArch64).

Taken from the kernel's ``asm/unistd_64.h`` (x86-64) and ``asm-generic/unistd.h``
(AArch64, which has no legacy calls such as ``open``, ``fork`` or ``poll``). Only the
names the filter mentions are listed, as ``name:number`` pairs; a name absent from a
table does not exist on that architecture and is skipped.
"""

from __future__ import annotations

_X86_64 = """
read:0 write:1 open:2 close:3 stat:4 fstat:5 lstat:6 poll:7 lseek:8 mmap:9 mprotect:10
munmap:11 brk:12 rt_sigaction:13 rt_sigprocmask:14 rt_sigreturn:15 ioctl:16 pread64:17
pwrite64:18 readv:19 writev:20 access:21 pipe:22 select:23 sched_yield:24 mremap:25
msync:26 mincore:27 madvise:28 dup:32 dup2:33 pause:34 nanosleep:35 getitimer:36
alarm:37 setitimer:38 getpid:39 sendfile:40 socket:41 connect:42 accept:43 sendto:44
recvfrom:45 sendmsg:46 recvmsg:47 shutdown:48 bind:49 listen:50 getsockname:51
getpeername:52 socketpair:53 setsockopt:54 getsockopt:55 clone:56 fork:57 vfork:58
execve:59 exit:60 wait4:61 kill:62 uname:63 fcntl:72 flock:73 fsync:74 fdatasync:75
truncate:76 ftruncate:77 getdents:78 getcwd:79 chdir:80 fchdir:81 rename:82 mkdir:83
rmdir:84 link:86 unlink:87 symlink:88 readlink:89 chmod:90 fchmod:91 umask:95
gettimeofday:96 getrlimit:97 getrusage:98 sysinfo:99 times:100 ptrace:101 getuid:102
syslog:103 getgid:104 setuid:105 setgid:106 geteuid:107 getegid:108 getppid:110
getpgrp:111 setreuid:113 setregid:114 getgroups:115 setgroups:116 setresuid:117
getresuid:118 setresgid:119 getresgid:120 getpgid:121 setfsuid:122 setfsgid:123
getsid:124 capset:126 rt_sigpending:127 rt_sigtimedwait:128 rt_sigqueueinfo:129
rt_sigsuspend:130 sigaltstack:131 personality:135 statfs:137 fstatfs:138 getpriority:140
modify_ldt:154 pivot_root:155 prctl:157 arch_prctl:158 setrlimit:160 chroot:161 acct:163
mount:165 umount2:166 swapon:167 swapoff:168 reboot:169 iopl:172 ioperm:173
init_module:175 delete_module:176 quotactl:179 gettid:186 getxattr:191 lgetxattr:192
fgetxattr:193 listxattr:194 llistxattr:195 flistxattr:196 tkill:200 time:201 futex:202
sched_getaffinity:204 lookup_dcookie:212 epoll_create:213 getdents64:217
set_tid_address:218 restart_syscall:219 fadvise64:221 clock_gettime:228 clock_getres:229
clock_nanosleep:230 exit_group:231 epoll_wait:232 epoll_ctl:233 tgkill:234
kexec_load:246 waitid:247 add_key:248 request_key:249 keyctl:250 openat:257 mkdirat:258
newfstatat:262 unlinkat:263 renameat:264 linkat:265 symlinkat:266 readlinkat:267
fchmodat:268 faccessat:269 pselect6:270 ppoll:271 unshare:272 set_robust_list:273
get_robust_list:274 utimensat:280 epoll_pwait:281 eventfd:284 fallocate:285 accept4:288
eventfd2:290 epoll_create1:291 dup3:292 pipe2:293 preadv:295 pwritev:296
rt_tgsigqueueinfo:297 perf_event_open:298 prlimit64:302 name_to_handle_at:303
open_by_handle_at:304 sendmmsg:307 setns:308 getcpu:309 process_vm_readv:310
process_vm_writev:311 kcmp:312 finit_module:313 renameat2:316 getrandom:318
kexec_file_load:320 bpf:321 execveat:322 userfaultfd:323 membarrier:324
copy_file_range:326 preadv2:327 pwritev2:328 statx:332 rseq:334 pidfd_send_signal:424
io_uring_setup:425 io_uring_enter:426 io_uring_register:427 open_tree:428 move_mount:429
fsopen:430 fsconfig:431 fsmount:432 fspick:433 pidfd_open:434 clone3:435 close_range:436
pidfd_getfd:438 faccessat2:439 process_madvise:440 epoll_pwait2:441 mount_setattr:442
memfd_secret:447
"""

_AARCH64 = """
getxattr:8 lgetxattr:9 fgetxattr:10 listxattr:11 llistxattr:12 flistxattr:13 getcwd:17
lookup_dcookie:18 eventfd2:19 epoll_create1:20 epoll_ctl:21 epoll_pwait:22 dup:23
dup3:24 fcntl:25 ioctl:29 flock:32 mkdirat:34 unlinkat:35 symlinkat:36 linkat:37
renameat:38 umount2:39 mount:40 pivot_root:41 statfs:43 fstatfs:44 truncate:45
ftruncate:46 fallocate:47 faccessat:48 chdir:49 fchdir:50 chroot:51 fchmod:52
fchmodat:53 openat:56 close:57 pipe2:59 quotactl:60 getdents64:61 lseek:62 read:63
write:64 readv:65 writev:66 pread64:67 pwrite64:68 preadv:69 pwritev:70 sendfile:71
pselect6:72 ppoll:73 readlinkat:78 newfstatat:79 fstat:80 fsync:82 fdatasync:83
utimensat:88 acct:89 capset:91 personality:92 exit:93 exit_group:94 waitid:95
set_tid_address:96 unshare:97 futex:98 set_robust_list:99 get_robust_list:100
nanosleep:101 getitimer:102 setitimer:103 kexec_load:104 init_module:105
delete_module:106 clock_gettime:113 clock_getres:114 clock_nanosleep:115 syslog:116
ptrace:117 sched_getaffinity:123 sched_yield:124 restart_syscall:128 kill:129 tkill:130
tgkill:131 sigaltstack:132 rt_sigsuspend:133 rt_sigaction:134 rt_sigprocmask:135
rt_sigpending:136 rt_sigtimedwait:137 rt_sigqueueinfo:138 rt_sigreturn:139
getpriority:141 reboot:142 setregid:143 setgid:144 setreuid:145 setuid:146 setresuid:147
getresuid:148 setresgid:149 getresgid:150 setfsuid:151 setfsgid:152 times:153
getpgid:155 getsid:156 getgroups:158 setgroups:159 uname:160 getrlimit:163 setrlimit:164
getrusage:165 umask:166 prctl:167 getcpu:168 gettimeofday:169 getpid:172 getppid:173
getuid:174 geteuid:175 getgid:176 getegid:177 gettid:178 sysinfo:179 socket:198
socketpair:199 bind:200 listen:201 accept:202 connect:203 getsockname:204
getpeername:205 sendto:206 recvfrom:207 setsockopt:208 getsockopt:209 shutdown:210
sendmsg:211 recvmsg:212 brk:214 munmap:215 mremap:216 add_key:217 request_key:218
keyctl:219 clone:220 execve:221 mmap:222 fadvise64:223 swapon:224 swapoff:225
mprotect:226 msync:227 mincore:232 madvise:233 rt_tgsigqueueinfo:240 perf_event_open:241
accept4:242 wait4:260 prlimit64:261 name_to_handle_at:264 open_by_handle_at:265
setns:268 sendmmsg:269 process_vm_readv:270 process_vm_writev:271 kcmp:272
finit_module:273 renameat2:276 getrandom:278 bpf:280 execveat:281 userfaultfd:282
membarrier:283 copy_file_range:285 preadv2:286 pwritev2:287 statx:291 rseq:293
kexec_file_load:294 pidfd_send_signal:424 io_uring_setup:425 io_uring_enter:426
io_uring_register:427 open_tree:428 move_mount:429 fsopen:430 fsconfig:431 fsmount:432
fspick:433 pidfd_open:434 clone3:435 close_range:436 pidfd_getfd:438 faccessat2:439
process_madvise:440 epoll_pwait2:441 mount_setattr:442 memfd_secret:447
"""


def _table(text: str) -> dict[str, int]:
    pairs = (item.split(":") for item in text.split())
    return {name: int(number) for name, number in pairs}


NUMBERS: dict[str, dict[str, int]] = {"x86_64": _table(_X86_64), "aarch64": _table(_AARCH64)}
