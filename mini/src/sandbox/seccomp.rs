//! Sockets by level: a seccomp filter on `socket(2)` (`EACCES`). Read-only commands
//! (L1, L2) create no socket at all; L3 commands keep IP sockets but create no UNIX
//! socket; L4 commands and MCP servers get no filter.
//!
//! Landlock's TCP rules (ABI 4) hook `bind` and `connect` of plain TCP sockets only:
//! TCP Fast Open (`sendto(…, MSG_FASTOPEN)`), MPTCP sockets and UDP (DNS) get past them.
//! And no file rule covers connecting to a UNIX socket (`/var/run/docker.sock`, a D-Bus
//! bus, an `ssh-agent`): connecting is not opening the file. Refusing the socket itself
//! closes them all, on every kernel with seccomp (3.5+), Landlock or not. `socketpair`
//! stays: the pair it makes is connected to nothing else. The ways to make a socket
//! without `socket(2)` are refused with it: `socketcall(2)` (32-bit ARM's old ABI) and
//! `io_uring_setup(2)` (io_uring's `IORING_OP_SOCKET` and `IORING_OP_CONNECT` are not
//! system calls a filter sees). A system call of another ABI than the binary's own
//! (i386 on x86_64, x32) is refused too, so the filter cannot be stepped around — a
//! 32-bit x86 program does not run below L4.
//!
//! Left to others: which commands get which filter (`Reach::denies_tcp`,
//! `Reach::unix_sockets`), and installing it in the child (`landlock::restrict_self`,
//! after `no_new_privs`).

/// `struct seccomp_data` offsets: the system call number, the ABI, the first argument
/// (its low 32 bits on a little-endian machine).
const NR: u32 = 0;
const ARCH: u32 = 4;
const ARG0_LOW: u32 = 16;

const LD_W_ABS: u16 = 0x20; // BPF_LD | BPF_W | BPF_ABS
const JEQ_K: u16 = 0x15; // BPF_JMP | BPF_JEQ | BPF_K
const JGE_K: u16 = 0x35; // BPF_JMP | BPF_JGE | BPF_K
const RET_K: u16 = 0x06; // BPF_RET | BPF_K

/// The `AUDIT_ARCH_*` of this build (`None`: no filter here — a big-endian or other
/// architecture Evolve does not ship for).
#[cfg(all(target_arch = "x86_64", target_endian = "little"))]
const AUDIT_ARCH: Option<u32> = Some(0xC000_003E);
#[cfg(all(target_arch = "aarch64", target_endian = "little"))]
const AUDIT_ARCH: Option<u32> = Some(0xC000_00B7);
#[cfg(all(target_arch = "arm", target_endian = "little"))]
const AUDIT_ARCH: Option<u32> = Some(0x4000_0028);
#[cfg(all(target_arch = "riscv64", target_endian = "little"))]
const AUDIT_ARCH: Option<u32> = Some(0xC000_00F3);
#[cfg(not(all(
    target_endian = "little",
    any(
        target_arch = "x86_64",
        target_arch = "aarch64",
        target_arch = "arm",
        target_arch = "riscv64"
    )
)))]
const AUDIT_ARCH: Option<u32> = None;

/// `socketcall(2)`, where the ABI has it (32-bit ARM): it can make sockets too. Number
/// 102 of the ARM table, an OABI-only entry that musl's headers for ARM EABI — and so the
/// libc crate — leave out; a kernel with OABI compatibility still has it.
#[cfg(target_arch = "arm")]
const SOCKETCALL: u32 = 102;
#[cfg(not(target_arch = "arm"))]
const SOCKETCALL: u32 = u32::MAX;

fn stmt(code: u16, k: u32) -> libc::sock_filter {
    libc::sock_filter {
        code,
        jt: 0,
        jf: 0,
        k,
    }
}

fn jump(code: u16, k: u32, jt: u8, jf: u8) -> libc::sock_filter {
    libc::sock_filter { code, jt, jf, k }
}

/// The filter's instructions for a command that may (`ip`) or may not create IP
/// sockets and may (`unix`) or may not create UNIX sockets; `None` when both are allowed
/// or where unsupported. A jump goes to the instruction `1 + jt` (or `1 + jf`) after
/// its own.
pub fn socket_filter(ip: bool, unix: bool) -> Option<Vec<libc::sock_filter>> {
    if ip && unix {
        return None;
    }
    let arch = AUDIT_ARCH?;
    let deny = libc::SECCOMP_RET_ERRNO | (libc::EACCES as u32 & libc::SECCOMP_RET_DATA);
    let allow = libc::SECCOMP_RET_ALLOW;
    let verdict = |ok: bool| if ok { allow } else { deny };
    // The last two instructions: allow, deny.
    const ALLOW: usize = 11;
    const DENY: usize = 12;
    let to = |from: usize, target: usize| (target - from - 1) as u8;
    Some(vec![
        /* 0 */ stmt(LD_W_ABS, ARCH),
        /* 1 */ jump(JEQ_K, arch, 0, to(1, DENY)), // another ABI
        /* 2 */ stmt(LD_W_ABS, NR),
        /* 3 */ jump(JGE_K, 0x4000_0000, to(3, DENY), 0), // x32 numbers
        /* 4 */ jump(JEQ_K, SOCKETCALL, to(4, DENY), 0),
        /* 5 */ jump(JEQ_K, libc::SYS_io_uring_setup as u32, to(5, DENY), 0),
        /* 6 */ jump(JEQ_K, libc::SYS_socket as u32, 0, to(6, ALLOW)),
        /* 7 */ stmt(LD_W_ABS, ARG0_LOW),
        /* 8 */ jump(JEQ_K, libc::AF_UNIX as u32, 0, 1),
        /* 9 */ stmt(RET_K, verdict(unix)),
        /* 10 */ stmt(RET_K, verdict(ip)),
        /* 11 */ stmt(RET_K, allow),
        /* 12 */ stmt(RET_K, deny),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs the filter on one system call the way the kernel's BPF interpreter would.
    fn verdict(prog: &[libc::sock_filter], arch: u32, nr: u32, arg0: u32) -> u32 {
        let data = |off: u32| match off {
            NR => nr,
            ARCH => arch,
            ARG0_LOW => arg0,
            _ => 0,
        };
        let (mut pc, mut acc) = (0usize, 0u32);
        loop {
            let i = prog[pc];
            match i.code {
                LD_W_ABS => {
                    acc = data(i.k);
                    pc += 1;
                }
                JEQ_K | JGE_K => {
                    let hit = if i.code == JEQ_K {
                        acc == i.k
                    } else {
                        acc >= i.k
                    };
                    pc += 1 + if hit { i.jt } else { i.jf } as usize;
                }
                RET_K => return i.k,
                other => panic!("unknown op {other:#x}"),
            }
        }
    }

    #[test]
    fn each_level_gets_its_sockets() {
        let Some(arch) = AUDIT_ARCH else {
            return;
        };
        assert!(socket_filter(true, true).is_none(), "L4: no filter");
        let read_only = socket_filter(false, false).unwrap();
        let l3 = socket_filter(true, false).unwrap();
        let deny = libc::SECCOMP_RET_ERRNO | libc::EACCES as u32;
        let allow = libc::SECCOMP_RET_ALLOW;
        let socket = libc::SYS_socket as u32;
        let uring = libc::SYS_io_uring_setup as u32;
        // (arch, nr, arg0, read-only, L3)
        let cases = [
            (arch, socket, libc::AF_UNIX as u32, deny, deny),
            (arch, socket, libc::AF_INET as u32, deny, allow),
            (arch, socket, libc::AF_INET6 as u32, deny, allow),
            (arch, socket, libc::AF_NETLINK as u32, deny, allow),
            (arch, socket, libc::AF_PACKET as u32, deny, allow),
            (
                arch,
                libc::SYS_socketpair as u32,
                libc::AF_UNIX as u32,
                allow,
                allow,
            ),
            (arch, libc::SYS_connect as u32, 3, allow, allow),
            (arch, libc::SYS_read as u32, 0, allow, allow),
            (arch, libc::SYS_openat as u32, 0, allow, allow),
            (arch, uring, 8, deny, deny),
            (arch, socket | 0x4000_0000, libc::AF_UNIX as u32, deny, deny),
            (0x4000_0003, 102, 1, deny, deny), // i386's socketcall
        ];
        for (arch, nr, arg0, want_read_only, want_l3) in cases {
            assert_eq!(
                verdict(&read_only, arch, nr, arg0),
                want_read_only,
                "read-only {arch:#x} {nr} {arg0}"
            );
            assert_eq!(
                verdict(&l3, arch, nr, arg0),
                want_l3,
                "L3 {arch:#x} {nr} {arg0}"
            );
        }
    }
}
