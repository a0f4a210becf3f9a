//! W3C trace context (`traceparent`, `tracestate`) read from a peer's headers, strictly, and
//! written on every request the harness sends. A peer's header is hostile input: anything but
//! the one exact shape of version `00` is ignored (the request is served as a new trace), and a
//! `tracestate` is kept only when it is short and every member well formed.

use opentelemetry::trace::{SpanContext, SpanId, TraceFlags, TraceId, TraceState};

/// The header names (lower case, as HTTP/2 and `http` write them).
pub const TRACEPARENT: &str = "traceparent";
/// See [`TRACEPARENT`].
pub const TRACESTATE: &str = "tracestate";

/// The one length of a version `00` `traceparent`: `00-` 32 hex `-` 16 hex `-` 2 hex.
pub const TRACEPARENT_LEN: usize = 55;
/// The longest `tracestate` kept: the W3C limit is 32 members of at most 256 characters, but a
/// vendor's state that needs more than this is not worth carrying through every hop.
pub const MAX_TRACESTATE_BYTES: usize = 512;
/// The most `tracestate` members kept (the W3C limit).
pub const MAX_TRACESTATE_MEMBERS: usize = 32;

/// The span context a `traceparent` (and `tracestate`) names, marked remote; `None` for
/// anything but a well-formed version `00` header with non-zero ids. A malformed or oversized
/// `tracestate` is dropped, the `traceparent` still kept (as the W3C specification asks).
pub fn parse(traceparent: &[u8], tracestate: Option<&[u8]>) -> Option<SpanContext> {
    if traceparent.len() != TRACEPARENT_LEN {
        return None;
    }
    let text = std::str::from_utf8(traceparent).ok()?;
    let mut fields = text.split('-');
    let (version, trace, span, flags) = (
        fields.next()?,
        fields.next()?,
        fields.next()?,
        fields.next()?,
    );
    if fields.next().is_some()
        || version != "00"
        || trace.len() != 32
        || span.len() != 16
        || flags.len() != 2
        || ![trace, span, flags].iter().all(|f| is_lower_hex(f))
    {
        return None;
    }
    let trace_id = TraceId::from_hex(trace).ok()?;
    let span_id = SpanId::from_hex(span).ok()?;
    let flags = u8::from_str_radix(flags, 16).ok()?;
    if trace_id == TraceId::INVALID || span_id == SpanId::INVALID {
        return None;
    }
    let state = tracestate.and_then(parse_state).unwrap_or_default();
    Some(SpanContext::new(
        trace_id,
        span_id,
        TraceFlags::new(flags) & TraceFlags::SAMPLED,
        true,
        state,
    ))
}

/// The `traceparent` that names `context`, or `None` for an invalid one.
pub fn format(context: &SpanContext) -> Option<String> {
    context.is_valid().then(|| {
        format!(
            "00-{}-{}-{:02x}",
            context.trace_id(),
            context.span_id(),
            context.trace_flags().to_u8() & TraceFlags::SAMPLED.to_u8()
        )
    })
}

/// The `tracestate` to send with `context`, when it has one.
pub fn format_state(context: &SpanContext) -> Option<String> {
    let header = context.trace_state().header();
    (!header.is_empty()).then_some(header)
}

fn is_lower_hex(text: &str) -> bool {
    text.bytes()
        .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// A `tracestate` within [`MAX_TRACESTATE_BYTES`] and [`MAX_TRACESTATE_MEMBERS`] whose every
/// member is `key=value` in the W3C alphabet; `None` otherwise.
fn parse_state(raw: &[u8]) -> Option<TraceState> {
    if raw.len() > MAX_TRACESTATE_BYTES {
        return None;
    }
    let text = std::str::from_utf8(raw).ok()?;
    let mut members = Vec::new();
    for member in text.split(',').map(str::trim).filter(|m| !m.is_empty()) {
        let (key, value) = member.split_once('=')?;
        let key_ok = !key.is_empty()
            && key.len() <= 256
            && key
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"_-*/@".contains(&b));
        let value_ok = !value.is_empty()
            && value.len() <= 256
            && value
                .bytes()
                .all(|b| (0x20..=0x7e).contains(&b) && b != b',' && b != b'=');
        if !key_ok || !value_ok {
            return None;
        }
        members.push((key.to_string(), value.to_string()));
    }
    if members.len() > MAX_TRACESTATE_MEMBERS {
        return None;
    }
    TraceState::from_key_value(members).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const GOOD: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    #[test]
    fn a_well_formed_traceparent_is_read_and_written_back_the_same() {
        let context = parse(GOOD.as_bytes(), None).unwrap();
        assert!(context.is_remote() && context.is_sampled());
        assert_eq!(format(&context).as_deref(), Some(GOOD));
    }

    #[test]
    fn every_malformed_traceparent_is_ignored() {
        for bad in [
            "",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-",
            "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01",
            "00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-+1",
            "00-4bf92f3577b34da6a3ce929d0e0e47-3600f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0\u{e9}",
        ] {
            assert!(parse(bad.as_bytes(), None).is_none(), "{bad:?}");
        }
        let long = format!("{GOOD}{}", "0".repeat(10_000));
        assert!(parse(long.as_bytes(), None).is_none());
    }

    #[test]
    fn a_tracestate_is_kept_when_well_formed_and_dropped_otherwise_with_the_parent_kept() {
        let kept = parse(GOOD.as_bytes(), Some(b"vendor=abc,other@x=1 2")).unwrap();
        assert_eq!(
            format_state(&kept).as_deref(),
            Some("vendor=abc,other@x=1 2")
        );
        let too_long = format!("k={}", "v".repeat(MAX_TRACESTATE_BYTES));
        let too_many = (0..40)
            .map(|i| format!("k{i}=v"))
            .collect::<Vec<_>>()
            .join(",");
        for bad in [
            b"Upper=1".as_slice(),
            b"k=\n",
            b"novalue",
            b"k=a=b",
            too_long.as_bytes(),
            too_many.as_bytes(),
            b"k=\xff",
        ] {
            let context = parse(GOOD.as_bytes(), Some(bad)).unwrap();
            assert_eq!(
                format_state(&context),
                None,
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
    }

    #[test]
    fn only_the_sampled_flag_is_carried() {
        let context = parse(
            b"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-ff",
            None,
        )
        .unwrap();
        assert!(format(&context).unwrap().ends_with("-01"));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        #[test]
        fn no_input_panics_and_whatever_is_read_is_written_back_in_the_one_shape(
            parent in proptest::collection::vec(any::<u8>(), 0..80),
            state in proptest::option::of(proptest::collection::vec(any::<u8>(), 0..600)),
        ) {
            if let Some(context) = parse(&parent, state.as_deref()) {
                let written = format(&context).unwrap();
                prop_assert_eq!(written.len(), TRACEPARENT_LEN);
                prop_assert!(format_state(&context).is_none_or(|s| s.len() <= MAX_TRACESTATE_BYTES));
            }
        }

        #[test]
        fn any_well_formed_header_round_trips(
            trace in "[0-9a-f]{32}", span in "[0-9a-f]{16}", sampled in any::<bool>(),
        ) {
            let header = format!("00-{trace}-{span}-0{}", u8::from(sampled));
            let valid = trace.bytes().any(|b| b != b'0') && span.bytes().any(|b| b != b'0');
            let context = parse(header.as_bytes(), None);
            prop_assert_eq!(context.is_some(), valid);
            if let Some(context) = context {
                prop_assert_eq!(format(&context), Some(header));
            }
        }
    }
}
