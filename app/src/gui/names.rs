//! The names the viewer gives open files: the file name, and where two open files share
//! it, as many of their directories as tell them apart ("run_a/trace.json" and
//! "run_b/trace.json"), as editors name tabs of files with one name.

use std::path::{Component, Path};

/// One name per path, in order: the file name, lengthened by parent directories (nearest
/// first) until no two paths of one file name read alike.
pub fn distinct_names(paths: &[&Path]) -> Vec<String> {
    let parts: Vec<Vec<String>> = paths.iter().map(|p| reversed_parts(p)).collect();
    let mut depth: Vec<usize> = vec![1; paths.len()];
    // Each pass lengthens every name still shared; a path's parts run out at its root.
    loop {
        let names: Vec<String> = parts
            .iter()
            .zip(&depth)
            .map(|(p, &k)| name_of(p, k))
            .collect();
        let mut grew = false;
        for i in 0..paths.len() {
            let shared = names
                .iter()
                .enumerate()
                .any(|(j, n)| j != i && *n == names[i]);
            if shared && depth[i] < parts[i].len() {
                depth[i] += 1;
                grew = true;
            }
        }
        if !grew {
            return names;
        }
    }
}

/// The path's normal components, last first.
fn reversed_parts(path: &Path) -> Vec<String> {
    let mut parts: Vec<String> = path
        .components()
        .filter_map(|c| match c {
            Component::Normal(s) => Some(s.to_string_lossy().into_owned()),
            _ => None,
        })
        .collect();
    if parts.is_empty() {
        parts.push(path.display().to_string());
    }
    parts.reverse();
    parts
}

/// The last `k` parts joined with `/`.
fn name_of(reversed: &[String], k: usize) -> String {
    let mut shown: Vec<&str> = reversed.iter().take(k).map(String::as_str).collect();
    shown.reverse();
    shown.join("/")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(paths: &[&str]) -> Vec<String> {
        let paths: Vec<&Path> = paths.iter().map(Path::new).collect();
        distinct_names(&paths)
    }

    #[test]
    fn one_name_is_the_file_name_and_shared_names_gain_directories() {
        assert_eq!(names(&["/x/a.json", "/y/b.json"]), ["a.json", "b.json"]);
        assert_eq!(
            names(&["/r/run_a/t.json", "/r/run_b/t.json", "/r/c.json"]),
            ["run_a/t.json", "run_b/t.json", "c.json"]
        );
        // Directories alike for a while: as many as it takes, nearest first.
        assert_eq!(
            names(&["/a/same/t.json", "/b/same/t.json"]),
            ["a/same/t.json", "b/same/t.json"]
        );
        // One path the other's suffix: the shorter runs out and keeps its whole path.
        assert_eq!(names(&["/t.json", "/a/t.json"]), ["t.json", "a/t.json"]);
        // The same path twice stays alike (nothing tells them apart).
        assert_eq!(names(&["/a/t.json", "/a/t.json"]), ["a/t.json", "a/t.json"]);
    }
}
