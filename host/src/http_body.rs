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
