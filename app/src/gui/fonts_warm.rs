//! The glyphs the views draw with, rasterized while the first files load, one font a frame.
//!
//! egui rasterizes a glyph into its font atlas the first time a font draws it. The frame a
//! loaded file first appears in lays out its toolbar, axes, table and status line in some
//! ten fonts and sizes at once: ~9 ms of a 15 ms frame went to rasterizing them (measured
//! with `frame_timings` on a 111 MB trace; the frame took 6 ms with the glyphs already
//! there). Laying out half of [`GLYPHS`] in one of [`warm_fonts`] a frame while the loading
//! view is up spreads that over frames that have time to spare (~1–2 ms each), and costs
//! nothing once every font is done.

use egui::{Color32, Context, FontId, Id, Style, TextStyle};

/// What the views write: printable ASCII and the few other characters their labels use,
/// in two parts laid out a frame apart (a font's whole set took up to 3.5 ms: monospace).
const GLYPHS: [&str; 2] = [
    " !\"#$%&'()*+,-./0123456789:;<=>?@ABCDEFGHIJKLMNOPQRSTUVWXYZ[\\]^_`",
    "abcdefghijklmnopqrstuvwxyz{|}~·×–—…µ▾▸→←≤≥±°",
];

/// The fonts the views draw with: the style's text styles and the sizes the timeline, its
/// markers, lanes and overlays and the allocation view paint with
/// (`timeline/mod.rs`, `paint.rs`, `timeline/lanes.rs`, `timeline/overlay.rs`,
/// `allocations/pointer.rs`).
pub fn warm_fonts(style: &Style) -> Vec<FontId> {
    let mut fonts: Vec<FontId> = [
        TextStyle::Small,
        TextStyle::Body,
        TextStyle::Button,
        TextStyle::Monospace,
        TextStyle::Heading,
    ]
    .iter()
    .filter_map(|s| style.text_styles.get(s).cloned())
    .collect();
    fonts.extend([
        FontId::proportional(10.5),
        FontId::proportional(11.0),
        FontId::proportional(12.0),
        FontId::monospace(11.5),
    ]);
    fonts
}

/// Rasterize the next part of [`GLYPHS`] in the next font not yet done; nothing once all are.
pub fn warm_next_font(ctx: &Context) {
    let id = Id::unique("vramscope-fonts-warmed");
    let done: usize = ctx.data(|d| d.get_temp(id)).unwrap_or(0);
    let (font, part) = (done / GLYPHS.len(), done % GLYPHS.len());
    let Some(font) = warm_fonts(&ctx.global_style()).into_iter().nth(font) else {
        return;
    };
    ctx.fonts_mut(|f| {
        f.layout_no_wrap(GLYPHS[part].to_owned(), font, Color32::WHITE);
    });
    ctx.data_mut(|d| d.insert_temp(id, done + 1));
}

#[cfg(test)]
mod tests {
    use super::{GLYPHS, warm_fonts, warm_next_font};

    /// Whether laying out `GLYPHS` in every warm font adds anything to the font atlas (its
    /// glyphs at the places in the text these parts put them: egui rasterizes a glyph per
    /// sub-pixel position).
    fn atlas_grows(ctx: &egui::Context) -> bool {
        let before = ctx.fonts(|f| f.font_atlas_fill_ratio());
        for font in warm_fonts(&ctx.global_style()) {
            for part in GLYPHS {
                ctx.fonts_mut(|f| {
                    f.layout_no_wrap(part.to_owned(), font.clone(), egui::Color32::WHITE);
                });
            }
        }
        let grew = ctx.fonts(|f| f.font_atlas_fill_ratio()) > before;
        frame(ctx, |_| {});
        grew
    }

    /// One frame of `ctx` running `f`, its texture changes dropped (no renderer here).
    fn frame(ctx: &egui::Context, f: impl FnMut(&mut egui::Ui)) {
        ctx.run_ui(egui::RawInput::default(), f)
            .textures_delta
            .clear();
    }

    #[test]
    fn loading_frames_rasterize_every_font_the_views_draw_with_then_stop() {
        let ctx = egui::Context::default();
        let fonts = warm_fonts(&ctx.global_style()).len();
        assert!(fonts >= 8, "{fonts} fonts");
        // A frame so that the context has its fonts.
        frame(&ctx, |_| {});
        assert!(atlas_grows(&ctx), "a fresh context has none of the glyphs");
        let ctx = egui::Context::default();
        for _ in 0..fonts * GLYPHS.len() + 3 {
            frame(&ctx, |ui| warm_next_font(ui.ctx()));
        }
        assert!(
            !atlas_grows(&ctx),
            "after the loading frames every glyph is there"
        );
    }
}
