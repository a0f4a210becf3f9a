//! Reading an HTTP response body no further than a size limit: the one reader the model client,
//! the card fetch and the A2A client share, so a peer that streams without end costs each of
//! them at most its limit. It decides nothing: each caller says what a cut body means to it (an
//! error, or enough of an error body to quote).

/// A body as read: all of it, or the first `limit` bytes of one that was longer (the rest is
/// never read).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Body {
    /// The whole body, at most the limit.
    Whole(Vec<u8>),
    /// The first `limit` bytes of a longer body.
    Cut(Vec<u8>),
}

/// Reads `response`'s body chunk by chunk, stopping at `limit` bytes.
pub async fn read_capped(
    response: &mut reqwest::Response,
    limit: usize,
) -> Result<Body, reqwest::Error> {
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await? {
        if body.len() + chunk.len() > limit {
            body.extend_from_slice(&chunk[..limit - body.len()]);
            return Ok(Body::Cut(body));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(Body::Whole(body))
}

#[cfg(test)]
mod tests {
    use axum::Router;
    use axum::extract::Path;
    use axum::routing::get;

    use super::*;

    /// A server on loopback whose `/bytes/{n}` answers `n` bytes.
    async fn serve() -> String {
        let app = Router::new().route(
            "/bytes/{n}",
            get(|Path(n): Path<usize>| async move { "x".repeat(n) }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        format!("http://{addr}")
    }

    async fn read(base: &str, n: usize, limit: usize) -> Body {
        let mut response = reqwest::get(format!("{base}/bytes/{n}")).await.unwrap();
        read_capped(&mut response, limit).await.unwrap()
    }

    #[tokio::test]
    async fn a_body_up_to_the_limit_is_whole_and_a_longer_one_is_cut_at_the_limit() {
        let base = serve().await;
        assert_eq!(read(&base, 10, 10).await, Body::Whole(vec![b'x'; 10]));
        assert_eq!(read(&base, 0, 10).await, Body::Whole(Vec::new()));
        assert_eq!(read(&base, 11, 10).await, Body::Cut(vec![b'x'; 10]));
        // Many chunks: the cut falls inside one, and keeps exactly the limit.
        match read(&base, 1_000_000, 50_001).await {
            Body::Cut(body) => assert_eq!(body.len(), 50_001),
            whole => panic!("not cut: {} bytes", whole_len(&whole)),
        }
    }

    fn whole_len(body: &Body) -> usize {
        match body {
            Body::Whole(bytes) | Body::Cut(bytes) => bytes.len(),
        }
    }
}
