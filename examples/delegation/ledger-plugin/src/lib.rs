//! The delegation example's ledger plugin: `account_balance` and `list_invoices` answer from a
//! small data set compiled into the component, and a rule tells the model to give figures only
//! as these tools return them, so every answer the ledger agent gives can be checked.

mod ledger;

use serde_json::{Value, json};
use tiny_harness_plugin_sdk::host::{self, Level};
use tiny_harness_plugin_sdk::{
    EditKind, Plugin, PluginInfo, PromptContext, SectionEdit, ToolDefinition, ToolError, edit,
    tool_error,
};

use ledger::{Ledger, LookupError};

const ACCOUNT_BALANCE: &str = "account_balance";
const LIST_INVOICES: &str = "list_invoices";

struct LedgerPlugin;

impl Plugin for LedgerPlugin {
    fn info() -> PluginInfo {
        PluginInfo {
            name: "example-ledger".into(),
            version: env!("CARGO_PKG_VERSION").into(),
        }
    }

    fn sections(_ctx: PromptContext) -> Vec<SectionEdit> {
        vec![edit(
            EditKind::Extend,
            "rules",
            "- Give account balances and invoices only as `account_balance` and `list_invoices` \
             return them, figures and dates unchanged; never estimate one.",
        )]
    }

    fn tools(_ctx: PromptContext) -> Vec<ToolDefinition> {
        let balance = json!({
            "type": "object",
            "properties": {
                "account": {
                    "type": "string",
                    "description": "The account's number (1001) or its name, whole or in part (Acme Corp, acme)."
                }
            },
            "required": ["account"],
            "additionalProperties": false
        });
        let invoices = json!({
            "type": "object",
            "properties": {
                "account": {
                    "type": "string",
                    "description": "Only this account's invoices: its number or its name. Omit for every account."
                },
                "status": {
                    "type": "string",
                    "enum": ["open", "paid", "overdue"],
                    "description": "Only invoices in this state. Omit for every state."
                }
            },
            "additionalProperties": false
        });
        vec![
            ToolDefinition {
                name: ACCOUNT_BALANCE.into(),
                description: "The balance of one customer account in the ledger, with its currency and the date it is for.".into(),
                parameters: balance.to_string(),
            },
            ToolDefinition {
                name: LIST_INVOICES.into(),
                description: "The ledger's invoices, one per line (number, account, amount, issue and due dates, state), optionally of one account and/or in one state.".into(),
                parameters: invoices.to_string(),
            },
        ]
    }

    fn invoke(name: String, arguments: String) -> Result<String, ToolError> {
        // The host validated the arguments against the schema: strings where given.
        let arguments: Value = serde_json::from_str(&arguments)
            .map_err(|err| tool_error("tool.invalid_arguments", err.to_string()))?;
        let text = |key: &str| arguments.get(key).and_then(Value::as_str);
        let ledger = Ledger::embedded();
        let answer = match name.as_str() {
            ACCOUNT_BALANCE => ledger.balance(text("account").unwrap_or_default()),
            LIST_INVOICES => ledger.invoices(text("account"), text("status")),
            _ => {
                return Err(tool_error(
                    "tool.not_found",
                    format!("no tool named \"{name}\""),
                ));
            }
        };
        answer
            .inspect(|_| host::log(Level::Info, &format!("{name}: answered from the ledger")))
            .map_err(|err: LookupError| tool_error(err.code(), err.message()))
    }
}

tiny_harness_plugin_sdk::export!(LedgerPlugin with_types_in tiny_harness_plugin_sdk);
