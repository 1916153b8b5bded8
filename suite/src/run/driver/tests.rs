use super::*;

#[test]
fn narrowed_pointers_map_back_to_the_full_list() {
    let narrowed = Narrowed {
        view: Exchange::new("GET", "http://h/g", 200, Default::default(), b"{}".to_vec()),
        left_out: 3,
        kept: vec![1, 4],
    };
    assert_eq!(narrowed.full_pointer("/goals/0/state"), "/goals/1/state");
    assert_eq!(narrowed.full_pointer("/goals/1"), "/goals/4");
    assert_eq!(narrowed.full_pointer("/goals"), "/goals");
    assert_eq!(narrowed.full_pointer("/goals/7/id"), "/goals/7/id");
    assert_eq!(narrowed.full_pointer("/goals/x"), "/goals/x");
    assert_eq!(narrowed.full_pointer(""), "");
}
