//! The ledger data set (`data/ledger.json`, compiled in: a plugin has no filesystem) and the two
//! questions it answers, as text a model can repeat.

use std::sync::OnceLock;

use serde::Deserialize;

/// The data set. Amounts are decimal strings shown exactly as written, so an answer can be
/// checked against the file character for character.
const DATA: &str = include_str!("../../data/ledger.json");

/// The whole ledger.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Ledger {
    pub currency: String,
    /// The date the balances are for.
    pub as_of: String,
    pub accounts: Vec<Account>,
    pub invoices: Vec<Invoice>,
}

/// One customer account.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Account {
    pub id: String,
    pub name: String,
    pub balance: String,
}

/// One invoice to an account.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Invoice {
    pub id: String,
    /// The account's id.
    pub account: String,
    pub issued: String,
    pub due: String,
    pub amount: String,
    /// `open`, `paid` or `overdue`.
    pub status: String,
}

/// Why a question about an account has no answer. The message lists what would work, so the
/// model can correct itself in one more call.
#[derive(Debug, PartialEq, Eq)]
pub enum LookupError {
    Unknown { query: String, known: Vec<String> },
    Ambiguous { query: String, matches: Vec<String> },
}

impl LookupError {
    /// The stable code the model reads.
    pub fn code(&self) -> &'static str {
        match self {
            LookupError::Unknown { .. } => "ledger.unknown_account",
            LookupError::Ambiguous { .. } => "ledger.ambiguous_account",
        }
    }

    /// What went wrong and what to ask instead.
    pub fn message(&self) -> String {
        match self {
            LookupError::Unknown { query, known } => format!(
                "no account matches \"{query}\"; accounts: {}",
                known.join(", ")
            ),
            LookupError::Ambiguous { query, matches } => format!(
                "\"{query}\" matches several accounts: {}; name one",
                matches.join(", ")
            ),
        }
    }
}

impl Ledger {
    /// The compiled-in ledger, read once per instance. The data set is checked by a unit test,
    /// so a failure here is a broken build, reported as the plugin's trap.
    pub fn embedded() -> &'static Ledger {
        static LEDGER: OnceLock<Ledger> = OnceLock::new();
        LEDGER.get_or_init(|| Ledger::parse(DATA).expect("data/ledger.json is a valid ledger"))
    }

    /// Reads a ledger from JSON text.
    pub fn parse(text: &str) -> Result<Ledger, serde_json::Error> {
        serde_json::from_str(text)
    }

    /// The account a question names: its id, its name in any case, or a part of one name
    /// ("acme"), since a model rarely writes a name exactly as the books do.
    pub fn account(&self, query: &str) -> Result<&Account, LookupError> {
        let wanted = query.trim().to_lowercase();
        if let Some(account) = self
            .accounts
            .iter()
            .find(|a| a.id == wanted || a.name.to_lowercase() == wanted)
        {
            return Ok(account);
        }
        let partial: Vec<&Account> = self
            .accounts
            .iter()
            .filter(|a| !wanted.is_empty() && a.name.to_lowercase().contains(&wanted))
            .collect();
        match partial.as_slice() {
            [one] => Ok(one),
            [] => Err(LookupError::Unknown {
                query: query.to_string(),
                known: self.accounts.iter().map(label).collect(),
            }),
            several => Err(LookupError::Ambiguous {
                query: query.to_string(),
                matches: several.iter().map(|a| label(a)).collect(),
            }),
        }
    }

    /// `Acme Corp (account 1001): balance 12480.50 EUR on 2026-09-30`.
    pub fn balance(&self, query: &str) -> Result<String, LookupError> {
        let account = self.account(query)?;
        Ok(format!(
            "{} (account {}): balance {} {} on {}",
            account.name, account.id, account.balance, self.currency, self.as_of
        ))
    }

    /// One line per invoice, of one account and/or in one state; every invoice when neither
    /// is given.
    pub fn invoices(
        &self,
        account: Option<&str>,
        status: Option<&str>,
    ) -> Result<String, LookupError> {
        let account = account.map(|query| self.account(query)).transpose()?;
        let lines: Vec<String> = self
            .invoices
            .iter()
            .filter(|i| account.is_none_or(|a| a.id == i.account))
            .filter(|i| status.is_none_or(|s| s == i.status))
            .map(|i| self.invoice_line(i))
            .collect();
        if lines.is_empty() {
            return Ok("no invoices match".to_string());
        }
        Ok(lines.join("\n"))
    }

    fn invoice_line(&self, invoice: &Invoice) -> String {
        let name = self
            .accounts
            .iter()
            .find(|a| a.id == invoice.account)
            .map_or("unknown account", |a| a.name.as_str());
        format!(
            "{}: {} (account {}), {} {}, issued {}, due {}, {}",
            invoice.id,
            name,
            invoice.account,
            invoice.amount,
            self.currency,
            invoice.issued,
            invoice.due,
            invoice.status
        )
    }
}

/// `1001 Acme Corp`.
fn label(account: &Account) -> String {
    format!("{} {}", account.id, account.name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shipped_data_set_reads_and_every_invoice_names_a_known_account() {
        let ledger = Ledger::parse(DATA).unwrap();
        assert!(!ledger.accounts.is_empty());
        for invoice in &ledger.invoices {
            assert!(
                ledger.accounts.iter().any(|a| a.id == invoice.account),
                "{} names account {}",
                invoice.id,
                invoice.account
            );
            assert!(["open", "paid", "overdue"].contains(&invoice.status.as_str()));
        }
    }

    #[test]
    fn an_account_is_found_by_id_by_name_in_any_case_or_by_a_unique_part_of_its_name() {
        let ledger = Ledger::embedded();
        for query in ["1001", "Acme Corp", "ACME CORP", " acme "] {
            assert_eq!(ledger.account(query).unwrap().id, "1001", "{query}");
        }
    }

    #[test]
    fn a_balance_states_the_figure_as_written_with_currency_and_date() {
        assert_eq!(
            Ledger::embedded().balance("Acme Corp").unwrap(),
            "Acme Corp (account 1001): balance 12480.50 EUR on 2026-09-30"
        );
    }

    #[test]
    fn an_unknown_account_lists_the_accounts_there_are() {
        let err = Ledger::embedded().balance("Umbrella").unwrap_err();
        assert_eq!(err.code(), "ledger.unknown_account");
        assert!(
            err.message().contains("1001 Acme Corp"),
            "{}",
            err.message()
        );
    }

    #[test]
    fn a_part_that_matches_several_names_is_ambiguous() {
        let ledger = Ledger::parse(
            r#"{"currency":"EUR","as_of":"d","invoices":[],"accounts":[
                {"id":"1","name":"North Ltd","balance":"1"},
                {"id":"2","name":"South Ltd","balance":"2"}]}"#,
        )
        .unwrap();
        let err = ledger.account("ltd").unwrap_err();
        assert_eq!(err.code(), "ledger.ambiguous_account");
    }

    #[test]
    fn invoices_filter_by_account_and_state() {
        let ledger = Ledger::embedded();
        let open = ledger.invoices(Some("acme"), Some("open")).unwrap();
        assert_eq!(
            open,
            "INV-2026-021: Acme Corp (account 1001), 1875.00 EUR, issued 2026-09-01, due 2026-10-01, open"
        );
        assert_eq!(
            ledger.invoices(None, None).unwrap().lines().count(),
            ledger.invoices.len()
        );
        assert_eq!(
            ledger.invoices(Some("Initech"), Some("overdue")).unwrap(),
            "no invoices match"
        );
    }
}
