//! The loop's decisions as tables: facts in, decision out, no model, no runtime.

use serde_json::json;

use super::*;

fn usage(input: u64, output: u64) -> Usage {
    Usage {
        input_tokens: input,
        output_tokens: output,
        ..Usage::default()
    }
}

fn dollars_per_million(input: f64, output: f64) -> Price {
    Price {
        input,
        output,
        cache_read: 0.0,
        cache_write: 0.0,
    }
}

#[test]
fn the_next_request_or_what_stops_the_run() {
    let spent = || Some(AgentError::TokenLimitExceeded { spent: 9, limit: 5 });
    // (cancelled, turns taken, max_turns, budget stop) -> decision
    type Row = (bool, u32, u32, Option<AgentError>, Result<(), AgentError>);
    let table: [Row; 6] = [
        (false, 0, 3, None, Ok(())),
        (false, 2, 3, None, Ok(())),
        (false, 3, 3, None, Err(AgentError::MaxTurns(3))),
        (true, 0, 3, None, Err(AgentError::Cancelled)),
        // Cancellation first, then max_turns, then the budget.
        (true, 3, 3, spent(), Err(AgentError::Cancelled)),
        (false, 1, 3, spent(), Err(spent().unwrap())),
    ];
    for (cancelled, turns, max, budget, expected) in table {
        // Errors have no `==`: their Debug shows every field.
        assert_eq!(
            format!("{:?}", before_request(cancelled, turns, max, budget)),
            format!("{expected:?}"),
            "cancelled {cancelled}, {turns} of {max} turns"
        );
    }
}

#[test]
fn a_budget_stops_the_run_once_reached() {
    let price = Some(dollars_per_million(1.0, 2.0));
    let dollars = Budget {
        price,
        max_usd: Some(3.0),
        max_tokens: None,
    };
    assert!(
        dollars.stop(&usage(500_000, 500_000)).is_none(),
        "$1.50 of $3"
    );
    assert!(
        matches!(
            dollars.stop(&usage(1_000_000, 1_000_000)),
            Some(AgentError::BudgetExceeded { spent_usd, limit_usd })
                if spent_usd == 3.0 && limit_usd == 3.0
        ),
        "reached counts"
    );
    // Without a price there is no dollar figure to stop at.
    let unpriced = Budget {
        price: None,
        ..dollars
    };
    assert!(unpriced.stop(&usage(9_000_000, 0)).is_none());
    let tokens = Budget {
        max_tokens: Some(100),
        ..Budget::default()
    };
    assert!(tokens.stop(&usage(60, 39)).is_none());
    assert!(matches!(
        tokens.stop(&usage(60, 40)),
        Some(AgentError::TokenLimitExceeded {
            spent: 100,
            limit: 100
        })
    ));
}

#[test]
fn after_a_turn_the_run_ends_stops_or_runs_its_calls() {
    let spent = || Some(AgentError::TokenLimitExceeded { spent: 9, limit: 5 });
    assert!(matches!(
        after_turn(0, None::<AgentError>),
        AfterTurn::Finish
    ));
    // A turn without calls is an answer even past the budget: nothing is left undone.
    assert!(matches!(after_turn(0, spent()), AfterTurn::Finish));
    assert!(matches!(
        after_turn(2, None::<AgentError>),
        AfterTurn::RunCalls
    ));
    assert!(matches!(
        after_turn(2, spent()),
        AfterTurn::StopForBudget(AgentError::TokenLimitExceeded { spent: 9, limit: 5 })
    ));
}

#[test]
fn only_a_prompt_too_long_is_compacted_and_sent_again_once() {
    let too_long = AgentError::Model(ModelError::PromptTooLong {
        status: 400,
        message: "prompt is too long".into(),
    });
    assert!(compact_and_retry(&too_long, false));
    assert!(!compact_and_retry(&too_long, true));
    assert!(!compact_and_retry(&AgentError::Cancelled, false));
}

#[test]
fn read_only_calls_run_together_and_others_alone() {
    // r = read-only, w = mutating; the batches in order, as (start, end).
    let table: [(&str, &[(usize, usize)]); 5] = [
        ("", &[]),
        ("rrr", &[(0, 3)]),
        ("www", &[(0, 1), (1, 2), (2, 3)]),
        ("rrwr", &[(0, 2), (2, 3), (3, 4)]),
        ("wrrw", &[(0, 1), (1, 3), (3, 4)]),
    ];
    for (calls, expected) in table {
        let concurrent: Vec<bool> = calls.chars().map(|c| c == 'r').collect();
        let mut batches = Vec::new();
        let mut start = 0;
        while start < concurrent.len() {
            let batch = next_batch(&concurrent, start);
            start = batch.end;
            batches.push((batch.start, batch.end));
        }
        assert_eq!(batches, expected, "{calls}");
    }
}

#[test]
fn a_call_starts_early_only_in_the_first_read_only_batch_and_under_the_limit() {
    let announced: Vec<String> = ["a", "b", "c"].map(String::from).to_vec();
    // (started so far, call, running, limit, read-only) -> starts now
    let table = [
        (0, "a", 0, 4, true, true),
        (1, "b", 1, 4, true, true),
        (0, "b", 0, 4, true, false), // `a` has not started: `b` waits behind it
        (1, "b", 1, 4, false, false), // mutating
        (1, "b", 1, 1, true, false), // the limit is reached
        (3, "d", 0, 4, true, false), // not announced
    ];
    for (started, id, running, limit, read_only, expected) in table {
        assert_eq!(
            starts_early(&announced, started, id, running, limit, read_only),
            expected,
            "{id} after {started} started, {running} running of {limit}, read-only {read_only}"
        );
    }
}

#[test]
fn calls_answered_or_started_early_do_not_run_again() {
    let calls: Vec<ToolUse> = ["a", "b", "c"]
        .map(|id| ToolUse::new(id, "Read", json!({})))
        .to_vec();
    let calls: Vec<&ToolUse> = calls.iter().collect();
    let ids = |run: Cow<[&ToolUse]>| run.iter().map(|c| c.id.clone()).collect::<Vec<_>>();
    let none: HashMap<String, ()> = HashMap::new();
    assert!(matches!(to_run(&calls, &none, &[]), Cow::Borrowed(_)));
    let answered = HashMap::from([("b".to_owned(), ())]);
    assert_eq!(ids(to_run(&calls, &answered, &[])), ["a", "c"]);
    assert_eq!(ids(to_run(&calls, &answered, &["a".into()])), ["c"]);
}

#[test]
fn the_window_the_room_and_the_thresholds() {
    assert_eq!(context_window(false, Some(10), Some(20)), None);
    assert_eq!(context_window(true, Some(10), Some(20)), Some(10));
    assert_eq!(context_window(true, None, Some(20)), Some(20));
    assert_eq!(context_window(true, None, None), None);

    assert_eq!(prompt_room(100_000, 4_000).unwrap(), 96_000);
    let error = prompt_room(4_000, 4_000).unwrap_err().to_string();
    assert!(
        error.contains("max_tokens (4000) leaves no room"),
        "{error}"
    );

    let thresholds = Thresholds::of(1_000, 0.5, 0.3, 0.8, 0.2);
    assert_eq!(
        thresholds,
        Thresholds {
            clear_above: 500,
            clear_to: 300,
            compact_above: 800,
            keep_recent: 200,
        }
    );
}

#[test]
fn clearing_takes_old_read_results_until_the_request_is_small_enough() {
    let results: [ResultSize; 5] = [
        ("small", 100, true),
        ("big1", 4_100, true),
        ("big2", 4_100, true),
        ("big3", 4_100, true),
        ("unread", 4_100, false),
    ];
    let none = HashSet::new();
    // Each big result cleared saves (4100 - 100) / 4 = 1000 tokens.
    let table: [(u64, u64, usize, &[&str]); 5] = [
        (5_000, 4_500, 0, &["big1"]),
        (5_000, 3_000, 0, &["big1", "big2"]),
        (5_000, 0, 0, &["big1", "big2", "big3"]), // never the unread one
        (5_000, 0, 2, &["big1", "big2"]),         // nor the two most recent
        (4_000, 4_000, 0, &[]),                   // small enough already
    ];
    for (tokens, low, keep, expected) in table {
        assert_eq!(
            results_to_clear(&results, keep, tokens, low, &none, 400),
            expected,
            "{tokens} tokens down to {low}, keeping {keep}"
        );
    }
    let cleared = HashSet::from(["big1".to_owned()]);
    assert_eq!(
        results_to_clear(&results, 0, 5_000, 4_500, &cleared, 400),
        ["big2"]
    );
}

#[test]
fn a_run_starts_from_its_prompt_or_the_conversation() {
    use Start::*;
    // (prompt, last turn has calls, ends with the user's message) -> start
    let table = [
        (true, false, false, Prompt),
        (true, false, true, Prompt),
        (true, true, false, WaitForApprovals),
        (false, true, false, FinishDeferred),
        (false, false, true, Continue),
        (false, false, false, NothingToContinue),
    ];
    for (prompt, open_turn, ends_with_user, expected) in table {
        assert_eq!(
            start(prompt, open_turn, ends_with_user),
            expected,
            "prompt {prompt}, open turn {open_turn}, ends with the user {ends_with_user}"
        );
    }
}

#[test]
fn each_record_is_stored_before_the_effect_that_needs_it_and_others_share_a_commit() {
    use Commit::*;
    use Recorded::*;
    // (kind) -> what a loop of a stored session does with it
    let table = [
        (Prompt, StoreNow),
        (ModelTurn, Stage),
        (MutatingStart, StoreNow),
        (ReadOnlyStart, Stage),
        (Permission, StoreNow),
        (Result, StoreNow),
        (NotRun, Stage),
        (ViewChange, StoreNow),
    ];
    for (kind, expected) in table {
        assert_eq!(commit(kind, true, None), expected, "{kind:?}");
        // Without a store nothing is kept, whoever writes it.
        assert_eq!(commit(kind, false, None), Skip, "{kind:?} unstored");
        assert_eq!(
            commit(kind, false, Some(Early::Holding)),
            Skip,
            "{kind:?} early, unstored"
        );
    }
}

#[test]
fn a_call_started_early_holds_its_records_until_its_turn_is_staged() {
    use Recorded::*;
    for kind in [ReadOnlyStart, Permission, Result] {
        assert_eq!(
            commit(kind, true, Some(Early::Holding)),
            Commit::Hold,
            "{kind:?} before its turn is staged"
        );
        // Behind the staged turn, each is stored as it comes, which takes the turn along.
        assert_eq!(
            commit(kind, true, Some(Early::Released)),
            Commit::StoreNow,
            "{kind:?} after"
        );
    }
}

#[test]
fn staged_records_wait_beside_read_only_calls_only() {
    let table = [
        // A mutating call's start was stored before it ran: nothing waits.
        (FlushPoint::Batch { read_only: false }, None),
        (
            FlushPoint::Batch { read_only: true },
            Some(READ_ONLY_COMMIT_DELAY),
        ),
        (FlushPoint::EarlyCalls, Some(READ_ONLY_COMMIT_DELAY)),
        (FlushPoint::NoCalls, Some(Duration::ZERO)),
        (FlushPoint::Stop, Some(Duration::ZERO)),
    ];
    for (point, expected) in table {
        assert_eq!(flush_within(point), expected, "{point:?}");
    }
}

#[test]
fn the_typed_answer_is_the_text_or_a_lone_output_call() {
    // (output calls, other calls) -> where the answer is
    let table = [
        (0, 0, Answer::Text),
        (1, 0, Answer::OutputCall),
        (2, 0, Answer::OutputCall),
        (0, 2, Answer::NotYet),
        (1, 1, Answer::TooSoon),
        (2, 3, Answer::TooSoon),
    ];
    for (outputs, others, expected) in table {
        assert_eq!(
            find_answer(outputs, others),
            expected,
            "{outputs} output calls, {others} others"
        );
    }
}

#[test]
fn a_refused_answer_goes_back_until_the_retries_are_spent() {
    // (attempt, max retries) -> what follows
    let table = [
        (1, 2, Refusal::Retry),
        (2, 2, Refusal::Retry),
        (3, 2, Refusal::Fail),
        (1, 0, Refusal::Fail),
    ];
    for (attempt, max, expected) in table {
        assert_eq!(
            refuse_answer(attempt, max),
            expected,
            "attempt {attempt} of {max} retries"
        );
    }
}

#[test]
fn every_output_call_gets_a_result_and_only_the_first_counts() {
    use OutputResult::*;
    // (index, alone, accepted) -> result, and whether it is an error
    let table = [
        (0, true, true, Received, false),
        (0, true, false, Refused, true),
        (1, true, true, NotCounted, true),
        (1, true, false, NotCounted, true),
        (0, false, false, CallAlone, true),
        (1, false, true, CallAlone, true),
    ];
    for (index, alone, accepted, expected, error) in table {
        let result = output_result(index, alone, accepted);
        assert_eq!(
            result, expected,
            "call {index}, alone {alone}, accepted {accepted}"
        );
        assert_eq!(result.is_error(), error, "{result:?}");
    }
}

#[test]
fn stop_hooks_are_asked_up_to_their_bound_and_may_send_the_run_on() {
    // (continued so far, max) -> asked
    let table = [(0, 3, true), (2, 3, true), (3, 3, false), (0, 0, false)];
    for (continued, max, expected) in table {
        assert_eq!(
            asks_stop_hooks(continued, max),
            expected,
            "{continued} of {max}"
        );
    }
    assert_eq!(after_stop(None), AfterStop::Finish);
    assert_eq!(
        after_stop(Some("check the tests".into())),
        AfterStop::GoOn("check the tests".into())
    );
}
