//! For the REST client's unit tests: an HTTP server on a local port answering each request
//! with what a function of its method and path says (one request per connection).

use std::sync::Arc;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// An answer: status and JSON body.
pub struct Answer(pub u16, pub String);

/// Starts the server on the current runtime; returns its base URI (`http://127.0.0.1:PORT`).
pub async fn serve(answer: impl Fn(&str, &str) -> Answer + Send + Sync + 'static) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let uri = format!("http://{}", listener.local_addr().expect("address"));
    let answer = Arc::new(answer);
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let answer = answer.clone();
            tokio::spawn(async move {
                let Some((method, path)) = read_request(&mut socket).await else {
                    return;
                };
                let Answer(status, body) = answer(&method, &path);
                let head = format!(
                    "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                    body.len()
                );
                let _ = socket.write_all(head.as_bytes()).await;
                let _ = socket.write_all(body.as_bytes()).await;
            });
        }
    });
    uri
}

/// Reads one request (its head, then as many body bytes as it announces): method and path.
async fn read_request(socket: &mut tokio::net::TcpStream) -> Option<(String, String)> {
    let mut bytes = Vec::new();
    let mut buf = [0u8; 8192];
    let end = loop {
        let n = socket.read(&mut buf).await.ok().filter(|n| *n > 0)?;
        bytes.extend_from_slice(&buf[..n]);
        if let Some(at) = bytes.windows(4).position(|w| w == b"\r\n\r\n") {
            break at + 4;
        }
    };
    let head = String::from_utf8_lossy(&bytes[..end]).to_string();
    let length: usize = head
        .lines()
        .find_map(|l| {
            let (name, value) = l.split_once(':')?;
            name.eq_ignore_ascii_case("content-length")
                .then(|| value.trim().parse().ok())?
        })
        .unwrap_or(0);
    while bytes.len() < end + length {
        let n = socket.read(&mut buf).await.ok().filter(|n| *n > 0)?;
        bytes.extend_from_slice(&buf[..n]);
    }
    let mut first = head.lines().next()?.split(' ');
    Some((first.next()?.to_string(), first.next()?.to_string()))
}
