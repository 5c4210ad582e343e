//! `advise`'s reporters: a table per device for people, one JSON document for programs
//! (`{"devices":[{"device","measured_peak_bytes","techniques":[…],"fits"?}]}`); each
//! technique's parameter under its own key (`world_size`, `factor`, `degree`, `rank`).

use super::assumptions::{assumptions, price};
use std::io::{self, Write};

use collector::analysis::advise::{
    Caveat, DeviceAdvice, Estimate, Fit, Parameter, SettingChange, SettingEstimate, Technique,
};
use collector::units::bytes_iec;
use serde_json::{Map, Value, json};

/// One device's advice with its display name (`cpu`, `cuda:0`).
pub struct NamedAdvice<'a> {
    /// The device's name.
    pub device: String,
    /// The advice.
    pub advice: &'a DeviceAdvice,
}

/// The advice as one JSON document.
pub fn advise_json(out: &mut impl Write, devices: &[NamedAdvice<'_>]) -> io::Result<()> {
    let devices: Vec<Value> = devices.iter().map(device_json).collect();
    serde_json::to_writer_pretty(&mut *out, &json!({ "devices": devices }))?;
    writeln!(out)
}

fn technique_json(t: Technique) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("technique".into(), t.as_str().into());
    if let Some((p, value)) = t.parameter() {
        m.insert(p.key().into(), value.into());
    }
    m
}

fn estimate_json(e: &Estimate) -> Value {
    let mut m = technique_json(e.technique);
    m.insert("estimated_peak_bytes".into(), e.estimated_peak_bytes.into());
    m.insert("saving_bytes".into(), e.saving_bytes.into());
    if let Some(h) = e.host_bytes {
        m.insert("host_bytes".into(), h.into());
    }
    m.insert("assumptions".into(), assumptions(&e.basis).into());
    m.insert("cost".into(), price(&e.basis).into());
    m.insert(
        "incompatible_with".into(),
        e.technique.incompatible_with().into(),
    );
    Value::Object(m)
}

fn fit_json(f: &Fit) -> Value {
    let combination = f.combination.as_ref().map(|c| {
        c.iter()
            .map(|&t| Value::Object(technique_json(t)))
            .collect::<Vec<_>>()
    });
    json!({
        "capacity_bytes": f.capacity_bytes,
        "fits_as_measured": f.fits_as_measured,
        "combination": combination,
        "estimated_peak_bytes": f.estimated_peak_bytes,
    })
}

fn device_json(d: &NamedAdvice<'_>) -> Value {
    let mut m = Map::new();
    m.insert("device".into(), d.device.as_str().into());
    m.insert(
        "measured_peak_bytes".into(),
        d.advice.measured_peak_bytes.into(),
    );
    let techniques: Vec<Value> = d.advice.estimates.iter().map(estimate_json).collect();
    m.insert("techniques".into(), techniques.into());
    if let Some(f) = &d.advice.fit {
        m.insert("fits".into(), fit_json(f));
    }
    if !d.advice.allocator.is_empty() {
        let settings: Vec<Value> = d.advice.allocator.iter().map(setting_json).collect();
        m.insert("allocator_settings".into(), settings.into());
    }
    Value::Object(m)
}

fn setting_json(s: &SettingEstimate) -> Value {
    let caveats: Vec<&str> = s.caveats.iter().map(|c| c.as_str()).collect();
    json!({
        "allocator_conf": s.allocator_conf,
        "reserved_peak_bytes": s.reserved_peak_bytes,
        "recorded_reserved_peak_bytes": s.recorded_reserved_peak_bytes,
        "saving_bytes": s.saving_bytes,
        "cached_free_at_peak_bytes": s.cached_free_at_peak_bytes,
        "ooms_with_recorded_settings": s.ooms_with_recorded_settings,
        "ooms_avoided": s.ooms_avoided,
        "device_mallocs": s.device_mallocs,
        "cost": setting_cost(s),
        "incompatible_with": caveats,
    })
}

/// A setting's price, in words.
pub fn setting_cost(s: &SettingEstimate) -> &'static str {
    match s.change {
        SettingChange::ExpandableSegments => {
            "memory mapped in pages as it grows (cuMemMap): a few more driver calls while the reserve grows"
        }
        SettingChange::MaxSplitSize => {
            "large cached blocks kept whole: more cudaMalloc calls where request sizes vary"
        }
        SettingChange::RoundupPower2Divisions => {
            "requests rounded up to power-of-two divisions: more bytes per block, more reuse"
        }
        SettingChange::GarbageCollection => {
            "cached blocks given back past the threshold: more cudaMalloc calls"
        }
        SettingChange::Other => "no change the model measures",
    }
}

/// What a caveat means, for people.
pub fn caveat_words(c: Caveat) -> &'static str {
    match c {
        Caveat::CudaIpc => {
            "memory shared between processes with cudaIpcGetMemHandle (custom all-reduce, CUDA tensors sent through torch.multiprocessing)"
        }
        Caveat::NcclBufferRegistration => {
            "NCCL buffer registration under CUDA graph capture (hangs reported with NCCL P2P)"
        }
        Caveat::CudaGraphs => "CUDA graphs' private pools in some torch versions",
    }
}

fn settings_text(out: &mut impl Write, settings: &[SettingEstimate]) -> io::Result<()> {
    writeln!(out)?;
    writeln!(
        out,
        "  allocator settings (PYTORCH_CUDA_ALLOC_CONF; the run replayed through the allocator model: reserved memory, the allocated peak unchanged)"
    )?;
    writeln!(
        out,
        "  {:<44} {:>13} {:>12} {:>13}",
        "setting", "reserved peak", "saving", "OOMs avoided"
    )?;
    for s in settings {
        let avoided = match s.ooms_with_recorded_settings {
            0 => "–".to_owned(),
            n => format!("{} of {n}", s.ooms_avoided),
        };
        writeln!(
            out,
            "  {:<44} {:>13} {:>12} {:>13}",
            s.allocator_conf,
            bytes_iec(s.reserved_peak_bytes as i64),
            bytes_iec(s.saving_bytes),
            avoided
        )?;
    }
    for s in settings {
        writeln!(out)?;
        writeln!(
            out,
            "  {}: against {} reserved under the recorded settings, replayed alike",
            s.allocator_conf,
            bytes_iec(s.recorded_reserved_peak_bytes as i64)
        )?;
        writeln!(out, "    price: {}", setting_cost(s))?;
        for &c in s.caveats {
            writeln!(out, "    not with: {}", caveat_words(c))?;
        }
    }
    Ok(())
}

/// A technique with its parameter, for people: `zero1 ×4 ranks`, `micro_batch ÷2`,
/// `tensor_parallel ×2`, `lora r=8`.
pub fn label(t: Technique) -> String {
    match t.parameter() {
        Some((Parameter::WorldSize, n)) => format!("{} ×{n} ranks", t.as_str()),
        Some((Parameter::Factor, k)) => format!("{} ÷{k}", t.as_str()),
        Some((Parameter::Degree, d)) => format!("{} ×{d}", t.as_str()),
        Some((Parameter::Rank, r)) => format!("{} r={r}", t.as_str()),
        None => t.as_str().to_owned(),
    }
}

/// The advice as text: per device a table of estimates, then each one's assumptions and
/// price, then the fit.
pub fn advise_text(out: &mut impl Write, devices: &[NamedAdvice<'_>]) -> io::Result<()> {
    for (i, d) in devices.iter().enumerate() {
        if i > 0 {
            writeln!(out)?;
        }
        let a = d.advice;
        writeln!(
            out,
            "{}  measured peak {}",
            d.device,
            bytes_iec(a.measured_peak_bytes)
        )?;
        writeln!(
            out,
            "  {:<28} {:>12} {:>12}",
            "technique", "est. peak", "saving"
        )?;
        for e in &a.estimates {
            writeln!(
                out,
                "  {:<28} {:>12} {:>12}",
                label(e.technique),
                bytes_iec(e.estimated_peak_bytes),
                bytes_iec(e.saving_bytes)
            )?;
        }
        for e in &a.estimates {
            writeln!(out)?;
            writeln!(out, "  {}: {}", label(e.technique), assumptions(&e.basis))?;
            writeln!(out, "    price: {}", price(&e.basis))?;
            if let Some(h) = e.host_bytes {
                writeln!(out, "    host memory: {}", bytes_iec(h))?;
            }
            let not_with = e.technique.incompatible_with();
            if !not_with.is_empty() {
                writeln!(out, "    not with: {}", not_with.join(", "))?;
            }
        }
        if !a.allocator.is_empty() {
            settings_text(out, &a.allocator)?;
        }
        if let Some(f) = &a.fit {
            writeln!(out)?;
            fit_text(out, f)?;
        }
    }
    Ok(())
}

fn fit_text(out: &mut impl Write, f: &Fit) -> io::Result<()> {
    writeln!(out, "  {}", fit_sentence(f))
}

/// The smallest combination that fits, in one line (the text, the report and the viewer
/// say the same).
pub fn fit_sentence(f: &Fit) -> String {
    let capacity = bytes_iec(i64::try_from(f.capacity_bytes).unwrap_or(i64::MAX));
    if f.fits_as_measured {
        return format!("fits in {capacity} as measured: nothing to change");
    }
    match (&f.combination, f.estimated_peak_bytes) {
        (Some(c), Some(peak)) => {
            let names: Vec<String> = c.iter().map(|&t| label(t)).collect();
            format!(
                "to fit in {capacity}: {} (estimated peak {})",
                names.join(" + "),
                bytes_iec(peak)
            )
        }
        _ => format!("no combination is estimated to fit in {capacity}"),
    }
}
