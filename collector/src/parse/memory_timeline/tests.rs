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
