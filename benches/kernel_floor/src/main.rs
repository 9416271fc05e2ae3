// Two bare PING responders (see run.sh): what the kernel alone costs per
// request at -P 1 on epoll and on io_uring. A measuring tool, not server code.
use std::collections::HashMap;
use std::io::{Read, Write};
use std::os::fd::{AsRawFd, FromRawFd};

fn replies(buf: &[u8], out: &mut Vec<u8>) {
    for _ in buf.windows(2).filter(|w| w == b"\r\n") {
        out.extend_from_slice(b"+PONG\r\n");
    }
}

fn epoll(port: u16) {
    use mio::net::TcpListener;
    use mio::{Events, Interest, Poll, Token};
    let mut poll = Poll::new().unwrap();
    let mut l = TcpListener::bind(format!("127.0.0.1:{port}").parse().unwrap()).unwrap();
    poll.registry()
        .register(&mut l, Token(0), Interest::READABLE)
        .unwrap();
    let mut conns = HashMap::new();
    let mut next = 1;
    let mut events = Events::with_capacity(1024);
    let mut buf = vec![0u8; 16384];
    let mut out = Vec::new();
    loop {
        poll.poll(&mut events, None).unwrap();
        for ev in events.iter() {
            if ev.token() == Token(0) {
                while let Ok((mut s, _)) = l.accept() {
                    s.set_nodelay(true).unwrap();
                    poll.registry()
                        .register(&mut s, Token(next), Interest::READABLE)
                        .unwrap();
                    conns.insert(next, s);
                    next += 1;
                }
                continue;
            }
            let t = ev.token().0;
            let Some(s) = conns.get_mut(&t) else { continue };
            match s.read(&mut buf) {
                Ok(0) => {
                    conns.remove(&t);
                }
                Ok(n) => {
                    out.clear();
                    replies(&buf[..n], &mut out);
                    let _ = s.write(&out);
                }
                Err(_) => {}
            }
        }
    }
}

fn uring(port: u16) {
    use io_uring::{opcode, types, IoUring};
    let l = std::net::TcpListener::bind(("127.0.0.1", port)).unwrap();
    let mut ring: IoUring = IoUring::builder()
        .setup_single_issuer()
        .setup_defer_taskrun()
        .setup_coop_taskrun()
        .build(4096)
        .unwrap();
    const ACCEPT: u64 = u64::MAX;
    let acc = opcode::AcceptMulti::new(types::Fd(l.as_raw_fd()))
        .build()
        .user_data(ACCEPT);
    unsafe { ring.submission().push(&acc).unwrap() };
    // Per fd: the socket (dropping it closes it), recv and send buffers.
    let mut conns: HashMap<i32, (std::net::TcpStream, Vec<u8>, Vec<u8>)> = HashMap::new();
    loop {
        ring.submit_and_wait(1).unwrap();
        let cqes: Vec<_> = ring
            .completion()
            .map(|c| (c.user_data(), c.result()))
            .collect();
        for (ud, res) in cqes {
            if ud == ACCEPT {
                if res >= 0 {
                    let fd = res;
                    // The accepted socket is ours from here on.
                    let stream = unsafe { std::net::TcpStream::from_raw_fd(fd) };
                    stream.set_nodelay(true).unwrap();
                    let e = conns
                        .entry(fd)
                        .or_insert((stream, vec![0u8; 16384], Vec::new()));
                    let r = opcode::Recv::new(types::Fd(fd), e.1.as_mut_ptr(), e.1.len() as u32)
                        .build()
                        .user_data(fd as u64);
                    unsafe { ring.submission().push(&r).unwrap() };
                }
                continue;
            }
            let is_send = ud >> 32 == 1;
            let fd = (ud & 0xffff_ffff) as i32;
            if is_send {
                continue;
            }
            if res <= 0 {
                conns.remove(&fd);
                continue;
            }
            let Some((_, rb, sb)) = conns.get_mut(&fd) else {
                continue;
            };
            sb.clear();
            replies(&rb[..res as usize], sb);
            let s = opcode::Send::new(types::Fd(fd), sb.as_ptr(), sb.len() as u32)
                .build()
                .user_data((1u64 << 32) | fd as u64);
            let r = opcode::Recv::new(types::Fd(fd), rb.as_mut_ptr(), rb.len() as u32)
                .build()
                .user_data(fd as u64);
            unsafe {
                ring.submission().push(&s).unwrap();
                ring.submission().push(&r).unwrap();
            }
        }
    }
}

/// io_uring with one multishot receive per connection into provided
/// buffers (no receive is submitted per request: the kernel posts each
/// arrival), the sends of a loop turn submitted together in its one
/// io_uring_enter.
fn uring_multishot(port: u16) {
    use io_uring::{cqueue, opcode, types, IoUring};
    const GROUP: u16 = 1;
    const BUFS: u16 = 4096;
    const BUF_LEN: usize = 2048;
    const ACCEPT: u64 = u64::MAX;
    const PROVIDE: u64 = u64::MAX - 1;
    const SEND: u64 = 1 << 32;
    let l = std::net::TcpListener::bind(("127.0.0.1", port)).unwrap();
    let mut ring: IoUring = IoUring::builder()
        .setup_single_issuer()
        .setup_defer_taskrun()
        .setup_coop_taskrun()
        .build(8192)
        .unwrap();
    let mut pool = vec![0u8; BUFS as usize * BUF_LEN];
    let provide = |pool: &mut Vec<u8>, bid: u16, n: u16| {
        let addr = pool[bid as usize * BUF_LEN..].as_mut_ptr();
        opcode::ProvideBuffers::new(addr, BUF_LEN as i32, n, GROUP, bid)
            .build()
            .user_data(PROVIDE)
    };
    let all = provide(&mut pool, 0, BUFS);
    let acc = opcode::AcceptMulti::new(types::Fd(l.as_raw_fd()))
        .build()
        .user_data(ACCEPT);
    unsafe {
        ring.submission().push(&all).unwrap();
        ring.submission().push(&acc).unwrap();
    }
    let recv = |fd: i32| {
        opcode::RecvMulti::new(types::Fd(fd), GROUP)
            .build()
            .user_data(fd as u64)
    };
    // Per fd: the socket (dropping it closes it) and its send buffer.
    let mut conns: HashMap<i32, (std::net::TcpStream, Vec<u8>)> = HashMap::new();
    let mut cqes = Vec::new();
    loop {
        ring.submit_and_wait(1).unwrap();
        cqes.clear();
        cqes.extend(ring.completion().map(|c| (c.user_data(), c.result(), c.flags())));
        for &(ud, res, flags) in &cqes {
            if ud == ACCEPT {
                if res >= 0 {
                    let stream = unsafe { std::net::TcpStream::from_raw_fd(res) };
                    stream.set_nodelay(true).unwrap();
                    conns.insert(res, (stream, Vec::new()));
                    unsafe { ring.submission().push(&recv(res)).unwrap() };
                }
                continue;
            }
            if ud == PROVIDE || ud & SEND != 0 {
                continue;
            }
            let fd = ud as i32;
            if res <= 0 {
                if res == -libc_enobufs() {
                    unsafe { ring.submission().push(&recv(fd)).unwrap() };
                } else {
                    conns.remove(&fd);
                }
                continue;
            }
            let Some(bid) = cqueue::buffer_select(flags) else { continue };
            let Some((_, sb)) = conns.get_mut(&fd) else { continue };
            let at = bid as usize * BUF_LEN;
            sb.clear();
            replies(&pool[at..at + res as usize], sb);
            let send = opcode::Send::new(types::Fd(fd), sb.as_ptr(), sb.len() as u32)
                .build()
                .user_data(SEND | fd as u64);
            let back = provide(&mut pool, bid, 1);
            unsafe {
                ring.submission().push(&send).unwrap();
                ring.submission().push(&back).unwrap();
                if !cqueue::more(flags) {
                    ring.submission().push(&recv(fd)).unwrap();
                }
            }
        }
    }
}

/// ENOBUFS (Linux): a multishot receive ran out of provided buffers.
fn libc_enobufs() -> i32 {
    105
}

fn main() {
    let a: Vec<String> = std::env::args().collect();
    let port: u16 = a[2].parse().unwrap();
    if a[1] == "uring" {
        uring(port)
    } else if a[1] == "multishot" {
        uring_multishot(port)
    } else {
        epoll(port)
    }
}
