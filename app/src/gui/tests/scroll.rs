//! "A scrollbar over the last column" (issue 37): every scroll area, tables included, puts
//! its bar beside its content, so a table's last column ends left of the bar.

use egui_kittest::kittest::Queryable;

use super::layout::{SMALL, harness_sized, texts};
use super::{sample, settle};

/// GIVEN the CPU sample's whole-run Ops table at 1000×700 (more rows than fit: it
/// scrolls), THEN the numbers of its last column end a scroll bar's width left of the
/// panel's right edge (where the row count is drawn), not under the bar.
#[test]
fn a_tables_last_column_ends_left_of_its_scroll_bar() {
    let mut h = harness_sized(vec![sample()], SMALL);
    settle(&mut h);
    let scroll = h.ctx.global_style().spacing.scroll;
    assert!(!scroll.floating, "scroll bars beside the content");
    let drawn = texts(&h);
    let header = (drawn.iter())
        .find(|t| t.text == "CPU Net")
        .expect("the last column's header");
    let count = (drawn.iter())
        .find(|t| t.text.ends_with(" ops"))
        .expect("the row count, at the panel's right edge");
    let doc = h.state().active_doc().expect("doc");
    let rows = doc.panels.table.order.len();
    assert!(
        h.query_all_by_label_contains("aten::").count() < rows,
        "the table scrolls"
    );
    let cells: Vec<f32> = (drawn.iter())
        .filter(|t| {
            t.full.top() > header.full.bottom() && t.full.left() >= header.full.left() - 40.0
        })
        .map(|t| t.full.right())
        .collect();
    assert!(cells.len() >= 4, "{cells:?}");
    let right = cells.iter().copied().fold(f32::MIN, f32::max);
    let gap = count.full.right() - right;
    assert!(
        gap >= scroll.bar_width,
        "the last column ends {gap} points before the panel's edge, under a {}-point bar",
        scroll.bar_width
    );
}
