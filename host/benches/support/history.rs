//! A task's history of realistic shape for the benches: the participant's request, then `turns`
//! tool calls with their results.

use tiny_harness::base::model::ToolCall;
use tiny_harness::work::context::HistoryItem;

pub fn history(turns: usize) -> Vec<HistoryItem> {
    let mut items = vec![HistoryItem::Inbound {
        from: "user".into(),
        trusted: true,
        text: "Reconcile the March ledger against the bank statement.".into(),
    }];
    for i in 0..turns {
        items.push(HistoryItem::Reply {
            text: format!("Checking batch {i}."),
            tool_calls: vec![ToolCall {
                id: format!("c{i}"),
                name: "complete_step".into(),
                arguments: format!("{{\"step\":\"s{i}\",\"output\":\"ok\"}}"),
            }],
        });
        items.push(HistoryItem::ToolResult {
            call_id: format!("c{i}"),
            name: "complete_step".into(),
            content: "x".repeat(400),
        });
    }
    items
}
