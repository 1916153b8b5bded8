use super::*;

#[test]
fn kinds_serialize_as_the_report_keywords() {
    for kind in DispositionKind::ALL {
        let text = serde_json::to_string(&kind).unwrap();
        assert_eq!(text, format!("\"{}\"", kind.as_str()));
        assert_eq!(
            serde_json::from_str::<DispositionKind>(&text).unwrap(),
            kind
        );
        assert_eq!(DispositionKind::parse(kind.as_str()), Some(kind));
    }
    for kind in OutcomeKind::ALL {
        let text = serde_json::to_string(&kind).unwrap();
        assert_eq!(text, format!("\"{}\"", kind.as_str()));
        assert_eq!(OutcomeKind::parse(kind.as_str()), Some(kind));
    }
    assert!(serde_json::from_str::<OutcomeKind>("\"advisory\"").is_err());
    assert_eq!(DispositionKind::parse("passed"), None);
}
