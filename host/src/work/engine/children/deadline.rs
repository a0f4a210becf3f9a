//! A child's deadline as its sub-task row keeps it: an RFC 3339 instant in UTC, so that it means
//! the same after a restart and reads plainly in the task extension.

use std::time::Duration;

use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

/// The instant `after` from now, as the row keeps it.
pub fn from_now(after: Duration) -> String {
    let at = OffsetDateTime::now_utc() + after;
    at.format(&Rfc3339).unwrap_or_default()
}

/// How long until the deadline: zero once it has passed, `None` when the row has none (or one
/// this harness cannot read, which is then treated as absent).
pub fn remaining(deadline: Option<&str>) -> Option<Duration> {
    let at = OffsetDateTime::parse(deadline?, &Rfc3339).ok()?;
    let left = at - OffsetDateTime::now_utc();
    Some(Duration::try_from(left).unwrap_or(Duration::ZERO))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_deadline_written_now_reads_back_as_the_time_left() {
        let left = remaining(Some(&from_now(Duration::from_secs(3600)))).unwrap();
        assert!(left <= Duration::from_secs(3600) && left > Duration::from_secs(3500));
    }

    #[test]
    fn a_past_deadline_has_nothing_left_and_a_missing_one_is_none() {
        assert_eq!(
            remaining(Some("2020-01-01T00:00:00Z")),
            Some(Duration::ZERO)
        );
        assert_eq!(remaining(None), None);
        assert_eq!(remaining(Some("tomorrow")), None);
    }
}
