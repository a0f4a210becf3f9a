//! Whether an agent's URL is this harness's own base URL: such an agent would be `self` under
//! another id, and delegating to it would loop back here, so it is not registered.
//!
//! URLs are compared as a client would reach them: scheme and host without case, the default
//! port the same as none, a trailing slash the same as none, query and fragment ignored. Names
//! are not resolved (`localhost` is not `127.0.0.1`): a loop this misses is caught by the
//! delegation chain (`tasks::hops`) on its first hop.

/// The URL reduced to what decides where a request goes, or `None` when it is no http(s) URL.
fn reduced(url: &str) -> Option<String> {
    let url = reqwest::Url::parse(url.trim()).ok()?;
    if !matches!(url.scheme(), "http" | "https") {
        return None;
    }
    let host = url.host_str()?.trim_end_matches('.').to_ascii_lowercase();
    let port = url.port_or_known_default()?;
    let path = url.path().trim_end_matches('/');
    Some(format!("{}://{host}:{port}{path}", url.scheme()))
}

/// Whether `url` reaches the harness whose base URL is `base_url`.
pub fn is_own_url(url: &str, base_url: &str) -> bool {
    match (reduced(url), reduced(base_url)) {
        (Some(url), Some(own)) => url == own,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spellings_of_the_same_address_are_this_harness() {
        let own = "http://harness.example:8080";
        for same in [
            "http://harness.example:8080",
            "http://harness.example:8080/",
            "HTTP://Harness.EXAMPLE:8080/",
            "http://harness.example.:8080/?x=1#top",
            " http://harness.example:8080 ",
        ] {
            assert!(is_own_url(same, own), "{same}");
        }
        assert!(is_own_url(
            "https://h.example:443/a2a/",
            "https://H.example/a2a"
        ));
        assert!(is_own_url("http://h.example:80", "http://h.example"));
    }

    #[test]
    fn other_ports_paths_schemes_and_hosts_are_other_agents() {
        let own = "http://harness.example:8080";
        for other in [
            "http://harness.example:8081",
            "https://harness.example:8080",
            "http://harness.example:8080/ledger",
            "http://ledger.example:8080",
            "http://127.0.0.1:8080",
            "not a url",
            "ftp://harness.example:8080",
        ] {
            assert!(!is_own_url(other, own), "{other}");
        }
        assert!(!is_own_url("http://h.example", "not a url"));
    }
}
