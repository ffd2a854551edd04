//! h2-crate-client URL CONNECTIONS STREAMS SECONDS: a closed loop of
//! CONNECTIONS h2c connections (prior knowledge), each with STREAMS requests
//! in flight, for SECONDS; prints the responses. One thread, as the other
//! generators in bench/h2_cost.py are given one core. No histograms, no
//! per-request bookkeeping: the library's cost alone, a lower bound for any
//! client built on it.

use std::time::{Duration, Instant};

use tokio::net::TcpStream;

async fn connection(addr: String, uri: http::Uri, streams: usize, end: Instant) -> u64 {
    let tcp = TcpStream::connect(&addr).await.expect("connect");
    tcp.set_nodelay(true).expect("nodelay");
    let (client, conn) = h2::client::handshake(tcp).await.expect("handshake");
    tokio::spawn(async move {
        let _ = conn.await;
    });
    let mut tasks = Vec::new();
    for _ in 0..streams {
        let mut client = client.clone();
        let uri = uri.clone();
        tasks.push(tokio::spawn(async move {
            let mut done = 0u64;
            while Instant::now() < end {
                client = client.ready().await.expect("ready");
                let req = http::Request::get(uri.clone()).body(()).expect("request");
                let (resp, _) = client.send_request(req, true).expect("send");
                let mut body = resp.await.expect("response").into_body();
                while let Some(chunk) = body.data().await {
                    let chunk = chunk.expect("body");
                    let _ = body.flow_control().release_capacity(chunk.len());
                }
                done += 1;
            }
            done
        }));
    }
    let mut total = 0;
    for t in tasks {
        total += t.await.expect("stream task");
    }
    total
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let [_, url, conns, streams, seconds] = args.as_slice() else {
        eprintln!("usage: h2-crate-client URL CONNECTIONS STREAMS SECONDS");
        std::process::exit(2);
    };
    let uri: http::Uri = url.parse().expect("a URL");
    let addr = format!("{}:{}", uri.host().expect("a host"), uri.port_u16().unwrap_or(80));
    let (conns, streams): (usize, usize) = (conns.parse().expect("connections"), streams.parse().expect("streams"));
    let end = Instant::now() + Duration::from_secs_f64(seconds.parse().expect("seconds"));
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    let total: u64 = rt.block_on(async {
        let handles: Vec<_> =
            (0..conns).map(|_| tokio::spawn(connection(addr.clone(), uri.clone(), streams, end))).collect();
        let mut total = 0;
        for h in handles {
            total += h.await.expect("connection task");
        }
        total
    });
    println!("{total} responses");
}
