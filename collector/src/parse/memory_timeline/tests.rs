use super::*;

#[test]
fn only_an_array_of_arrays_is_a_memory_timeline() {
    let importer = MemoryTimelineImporter;
    assert_eq!(importer.detect(b" [[-1, 1, 512, 0]]"), Detection::Certain);
    assert_eq!(importer.detect(b"[ \n [1, 2], [[0]]]"), Detection::Certain);
    assert_eq!(importer.detect(b"[{\"ph\": \"X\"}]"), Detection::No);
    assert_eq!(importer.detect(b"{\"traceEvents\": []}"), Detection::No);
    assert_eq!(importer.detect(b"[]"), Detection::No);
}

#[test]
fn offsets_count_lines_and_columns() {
    assert_eq!(offset_of(b"[\n[1, x]]", 2, 5), 6);
    assert_eq!(offset_of(b"[x]", 1, 2), 1);
}

#[test]
fn the_shape_is_read_from_what_follows_the_first_array() {
    assert!(is_plot(b"[[1, 2, 3, 4], [[0, 1], [0, 2]]]"));
    assert!(is_plot(b" [ [1] ,\n [ [0]]]"));
    assert!(!is_plot(b"[[-1, 1, 512, 0], [5, 2, 64, 3]]"));
    assert!(!is_plot(b"[[-1, 1, 512, 0]]"));
    assert!(!is_plot(b"[["));
}
