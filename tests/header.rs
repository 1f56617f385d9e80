//! include/offload/OffloadAPI.h must be what cbindgen generates from the current sources.
//! `UPDATE_HEADER=1 cargo test --test header` rewrites it.

use std::path::PathBuf;

#[test]
fn header_is_current() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let config = cbindgen::Config::from_file(root.join("cbindgen.toml")).expect("cbindgen.toml");
    let bindings = cbindgen::Builder::new()
        .with_crate(&root)
        .with_config(config)
        .generate()
        .expect("cbindgen could not generate the header");
    let mut generated = Vec::new();
    bindings.write(&mut generated);
    let path = root.join("include/offload/OffloadAPI.h");
    if std::env::var_os("UPDATE_HEADER").is_some() {
        std::fs::write(&path, &generated).expect("write header");
        return;
    }
    let committed = std::fs::read(&path).unwrap_or_default();
    assert!(
        committed == generated,
        "include/offload/OffloadAPI.h is out of date: run `UPDATE_HEADER=1 cargo test --test header` and commit it"
    );
}
