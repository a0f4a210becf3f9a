//! The ids the task service mints for new tasks and contexts, and the rule they keep: an id an
//! unproven caller reaches its task by cannot be guessed from another.

/// A new task or context id: a UUIDv7 whose 74 bits after the time are all random, from the
/// operating system's generator. A task id is what an unproven caller reaches its task by, so
/// it must not be guessable from another id: no counter (the `uuid` crate's `now_v7` counts
/// within a millisecond, which would make a neighbour's id one more than a known one), and 74
/// random bits is past any guessing at the request rate a server allows. The leading bits are
/// the time of creation: the store keys its tables by task id, so ids that grow with time
/// append to the right edge of each index instead of landing on a random page. The rule for
/// every id the harness mints is in docs/security.md.
pub(super) fn new_store_key() -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let at = uuid::Timestamp::from_unix(uuid::NoContext, now.as_secs(), now.subsec_nanos());
    uuid::Uuid::new_v7(at).to_string()
}

/// How long ago the id was minted, read from its UUIDv7 time: the age of a task for the log
/// line of its end. `None` for an id that is not a UUIDv7 (a task made before ids were) or
/// whose time lies ahead.
pub fn age_of(id: &str) -> Option<std::time::Duration> {
    let uuid = uuid::Uuid::parse_str(id).ok()?;
    if uuid.get_version_num() != 7 {
        return None;
    }
    let (secs, nanos) = uuid.get_timestamp()?.to_unix();
    let minted = std::time::UNIX_EPOCH + std::time::Duration::new(secs, nanos);
    std::time::SystemTime::now().duration_since(minted).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_minted_id_tells_its_age_and_another_id_tells_none() {
        let id = new_store_key();
        let age = age_of(&id).unwrap();
        assert!(age < std::time::Duration::from_secs(60), "{age:?}");
        assert_eq!(age_of("t-1"), None);
        assert_eq!(age_of(&uuid::Uuid::new_v4().to_string()), None);
    }

    /// The 74 bits after the timestamp and version of a UUIDv7 (rand_a and rand_b).
    fn random_bits(id: &str) -> u128 {
        let value = uuid::Uuid::parse_str(id).unwrap().as_u128();
        let rand_a = (value >> 64) & 0x0fff;
        let rand_b = value & 0x3fff_ffff_ffff_ffff;
        (rand_a << 62) | rand_b
    }

    #[test]
    fn ids_minted_together_share_no_counter_and_differ_in_their_random_bits() {
        let ids: Vec<String> = (0..2_000).map(|_| new_store_key()).collect();
        let mut close = 0;
        for pair in ids.windows(2) {
            let (a, b) = (random_bits(&pair[0]), random_bits(&pair[1]));
            assert_ne!(a, b);
            // A counter would put consecutive ids within a few steps of each other.
            if a.abs_diff(b) < 1 << 40 {
                close += 1;
            }
        }
        assert!(
            close <= 2,
            "{close} consecutive ids were within 2^40 of each other"
        );
        let parsed = uuid::Uuid::parse_str(&ids[0]).unwrap();
        assert_eq!(
            parsed.get_version_num(),
            7,
            "time-ordered for the store's indexes"
        );
    }
}
