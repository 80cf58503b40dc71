//! Preset numbers and target-file validation.

use expect_test::{Expect, expect};

use super::*;

#[track_caller]
fn check_toml_err(text: &str, expect: Expect) {
    match Target::from_toml_str(text) {
        Ok(t) => panic!("expected an error, got {t}"),
        Err(e) => expect.assert_eq(&format!("{e}\nspan: {:?}", e.span)),
    }
}

#[track_caller]
fn check_json_err(text: &str, expect: Expect) {
    match Target::from_json_str(text) {
        Ok(t) => panic!("expected an error, got {t}"),
        Err(e) => expect.assert_eq(&e.to_string()),
    }
}

#[test]
fn n150_usable_l1_is_the_capped_unreserved_region() {
    let t = Target::n150();
    // floor(0.95 * (1499136 - 103712)) = floor(1325652.8)
    assert_eq!(t.usable_l1_per_core(), 1_325_652);
    assert_eq!(t.worker_grid(), Grid::new(8, 8));
    assert_eq!(t.dst_tiles_half_sync(), 8);
    assert_eq!(t.dram_size(), 12 << 30);
}

#[test]
fn n300_matches_n150_per_chip() {
    let t = Target::n300();
    assert_eq!(t.usable_l1_per_core(), 1_325_652);
    assert_eq!(t.chips(), 2);
    assert_eq!(t.num_worker_cores(), 64);
}

#[test]
fn p150_usable_l1_uses_the_blackhole_base() {
    let t = Target::p150();
    // floor(0.95 * (1572864 - 98304)) = floor(1400832.0)
    assert_eq!(t.usable_l1_per_core(), 1_400_832);
    assert_eq!(t.worker_grid(), Grid::new(10, 13));
    assert_eq!(t.dram_alignment(), 64);
}

#[test]
fn aliases_resolve_to_presets() {
    for name in BUILTIN_NAMES {
        assert!(Target::builtin(name).is_some(), "{name}");
    }
    assert_eq!(Target::builtin("wormhole_b0"), Some(Target::n150()));
    assert_eq!(Target::builtin("Blackhole"), Some(Target::p150()));
    assert_eq!(Target::builtin("n9000"), None);
    assert_eq!(Target::default(), Target::n150());
}

#[test]
fn tile_bytes_delegate_to_the_data_type() {
    assert_eq!(Target::n150().tile_bytes(DataType::BfpBF8), 1088);
    assert_eq!(Target::n150().tile_bytes(DataType::F32), 4096);
}

#[test]
fn cap_is_exact_in_integers() {
    let cap = UsageCap::from_fraction(0.95).unwrap();
    assert_eq!(cap.parts_per_million(), 950_000);
    assert_eq!(cap.apply(1_395_424), 1_325_652);
    assert_eq!(UsageCap::from_fraction(0.0), None);
    assert_eq!(UsageCap::from_fraction(1.5), None);
    assert_eq!(UsageCap::from_fraction(f64::NAN), None);
}

#[test]
fn toml_file_overrides_a_base_preset() {
    let t = Target::from_toml_str(
        r#"
base = "p150"
name = "p150-mock"
worker_grid = { rows = 10, cols = 11 }
l1_usage_cap = 1.0
l1_const_eval_reserved = 4096
"#,
    )
    .unwrap();
    expect![[r#"p150-mock (blackhole, worker grid 10x11, 1470464 usable L1 bytes per core)"#]]
        .assert_eq(&t.to_string());
}

#[test]
fn json_file_overrides_a_base_preset() {
    let t = Target::from_json_str(r#"{"base": "n300", "l1_unreserved_base": 101152}"#).unwrap();
    assert_eq!(t.usable_l1_per_core(), 1_328_084);
    assert_eq!(t.chips(), 2);
}

#[test]
fn targets_are_values() {
    let a = Target::from_toml_str("base = \"n150\"").unwrap();
    assert_eq!(a, Target::n150());
    let b = a.with_overrides(&TargetOverrides { dst_tiles: Some(8), ..Default::default() });
    assert_ne!(b.unwrap(), a);
}

#[test]
fn toml_rejects_unknown_keys_with_their_position() {
    check_toml_err(
        "base = \"n150\"\nl1_sise = 5\n",
        expect![[r#"
            2:1: `l1_sise`: unknown key, expected `base` or one of: name, arch, chips, l1_size, l1_unreserved_base, l1_usage_cap, l1_const_eval_reserved, l1_small_size, worker_grid, dram_channels, dram_channel_size, l1_alignment, dram_alignment, pcie_alignment, dst_tiles, num_cbs, aiclk_mhz, dram_bandwidth_gb_s
            span: Some(14..21)"#]],
    );
}

#[test]
fn toml_rejects_an_unreserved_base_above_l1() {
    check_toml_err(
        "base = \"n150\"\nl1_unreserved_base = 2000000\n",
        expect![[r#"
            2:22: `l1_unreserved_base`: must be below l1_size (1499136), got 2000000
            span: Some(35..42)"#]],
    );
}

#[test]
fn toml_rejects_an_empty_grid() {
    check_toml_err(
        "base = \"n150\"\nworker_grid = { rows = 0, cols = 8 }\n",
        expect![[r#"
            2:15: `worker_grid`: must have at least one core, got 0x8
            span: Some(28..50)"#]],
    );
}

#[test]
fn toml_rejects_a_cap_outside_the_unit_interval() {
    check_toml_err(
        "base = \"n150\"\nl1_usage_cap = 1.2\n",
        expect![[r#"
            2:16: `l1_usage_cap`: must be in (0, 1], got 1.2
            span: Some(29..32)"#]],
    );
}

#[test]
fn toml_reports_type_errors_on_the_value() {
    check_toml_err(
        "base = \"n150\"\nl1_size = \"big\"\n",
        expect![[r#"
            2:11: `l1_size`: invalid type: string "big", expected u64
            span: Some(24..29)"#]],
    );
}

#[test]
fn toml_reports_syntax_errors_with_a_position() {
    check_toml_err(
        "base = \"n150\"\nl1_size = \n",
        expect![[r#"
            2:11: string values must be quoted, expected literal string
            span: Some(24..24)"#]],
    );
}

#[test]
fn toml_rejects_unknown_base_and_arch() {
    check_toml_err(
        "base = \"n9000\"\n",
        expect![[r#"
            1:8: `base`: unknown base target `n9000`, expected one of: n150, n300, p150
            span: Some(7..14)"#]],
    );
    check_toml_err(
        "base = \"n150\"\narch = \"grayskull\"\n",
        expect![[r#"
            2:8: `arch`: unknown arch `grayskull`, expected `wormhole_b0` or `blackhole`
            span: Some(21..32)"#]],
    );
}

#[test]
fn a_file_without_base_must_give_every_key() {
    check_toml_err(
        "l1_size = 1499136\n",
        expect![[r#"
            no `base` target, so every key is required; missing: name, arch, chips, l1_unreserved_base, l1_usage_cap, l1_const_eval_reserved, l1_small_size, worker_grid, dram_channels, dram_channel_size, l1_alignment, dram_alignment, pcie_alignment, dst_tiles, num_cbs, aiclk_mhz, dram_bandwidth_gb_s
            span: None"#]],
    );
}

#[test]
fn a_complete_file_needs_no_base() {
    let t = Target::from_toml_str(
        r#"
name = "custom"
arch = "wormhole_b0"
chips = 1
l1_size = 1499136
l1_unreserved_base = 101152
l1_usage_cap = 0.95
l1_const_eval_reserved = 0
l1_small_size = 65536
worker_grid = { rows = 7, cols = 8 }
dram_channels = 12
dram_channel_size = 1073741824
l1_alignment = 16
dram_alignment = 32
pcie_alignment = 32
dst_tiles = 16
num_cbs = 32
aiclk_mhz = 1000
dram_bandwidth_gb_s = 288
"#,
    )
    .unwrap();
    assert_eq!(t.num_worker_cores(), 56);
    assert_eq!(t.usable_l1_per_core(), 1_328_084);
}

#[test]
fn json_errors_name_the_field() {
    check_json_err(
        r#"{"base": "n150", "dram_alignment": 48}"#,
        expect![[r#"`dram_alignment`: must be a power of two, got 48"#]],
    );
    check_json_err(
        r#"{"base": "n150", "colour": 1}"#,
        expect![[
            r#"`colour`: unknown key, expected `base` or one of: name, arch, chips, l1_size, l1_unreserved_base, l1_usage_cap, l1_const_eval_reserved, l1_small_size, worker_grid, dram_channels, dram_channel_size, l1_alignment, dram_alignment, pcie_alignment, dst_tiles, num_cbs, aiclk_mhz, dram_bandwidth_gb_s"#
        ]],
    );
    check_json_err(
        r#"{"base": "n150", "worker_grid": {"rows": 8, "columns": 8}}"#,
        expect![[r#"`worker_grid`: unknown field `columns`, expected `rows` or `cols`"#]],
    );
    check_json_err(r#"{"base": "#, expect![[r#"1:9: EOF while parsing a value"#]]);
}

#[test]
fn const_eval_reservation_must_leave_room() {
    let err = Target::n150()
        .with_overrides(&TargetOverrides {
            l1_const_eval_reserved: Some(2_000_000),
            ..Default::default()
        })
        .unwrap_err();
    expect![[r#"`l1_const_eval_reserved`: must be below the capped unreserved L1 (1325652 bytes), got 2000000"#]]
        .assert_eq(&err.to_string());
}

#[test]
fn toml_rejects_a_grid_larger_than_any_device() {
    check_toml_err(
        "base = \"n150\"\nworker_grid = { rows = 100000, cols = 100000 }\n",
        expect![[r#"
            2:15: `worker_grid`: rows and cols must each be at most 16 (no Tenstorrent chip has a larger Tensix grid), got 100000 rows x 100000 cols
            span: Some(28..60)"#]],
    );
    check_toml_err(
        "base = \"n150\"\nworker_grid = { rows = 18446744073709551615, cols = 8 }\n",
        expect![[r#"
            2:24: u64 value was too large
            span: Some(37..57)"#]],
    );
}

#[test]
fn json_rejects_sizes_past_the_physical_bounds() {
    check_json_err(
        r#"{"base": "n150", "worker_grid": {"rows": 18446744073709551615, "cols": 8}}"#,
        expect![
            "`worker_grid`: rows and cols must each be at most 16 (no Tenstorrent chip has a larger Tensix grid), got 18446744073709551615 rows x 8 cols"
        ],
    );
    check_json_err(
        r#"{"base": "n150", "dram_channel_size": 18446744073709551615}"#,
        expect!["`dram_channel_size`: must be at most 1099511627776, got 18446744073709551615"],
    );
    check_json_err(
        r#"{"base": "n150", "l1_alignment": 9223372036854775808}"#,
        expect!["`l1_alignment`: must be at most 4096, got 9223372036854775808"],
    );
    check_json_err(
        r#"{"base": "n150", "chips": 4294967296}"#,
        expect!["`chips`: must be at most 1024, got 4294967296"],
    );
}

#[test]
fn the_largest_accepted_grid_loads() {
    let t = Target::from_toml_str("base = \"p150\"\nworker_grid = { rows = 16, cols = 16 }\n")
        .expect("16x16 is within the bounds");
    assert_eq!(t.num_worker_cores(), 256);
}

/// What `Target::load` gives for an argument, with `files` standing in for the file system.
fn load(arg: Option<&str>, files: &[(&str, &str)]) -> String {
    let read = |path: &str| {
        files
            .iter()
            .find(|(p, _)| *p == path)
            .map(|(_, text)| (*text).to_owned())
            .ok_or_else(|| format!("cannot read `{path}`: no such file"))
    };
    match Target::load(arg, read) {
        Ok(t) => format!("ok: {}", t.name),
        Err(e) => format!("error: {e}"),
    }
}

#[test]
fn load_takes_n150_by_default_a_builtin_by_alias_and_else_a_target_file() {
    let files =
        [("big.toml", "base = \"p150\"\nname = \"big\"\n"), ("w.json", r#"{"base": "n300"}"#)];
    expect![[r#"
        ok: n150
        ok: p150
        ok: big
        ok: n300"#]]
    .assert_eq(
        &[None, Some("blackhole"), Some("big.toml"), Some("w.json")]
            .map(|a| load(a, &files))
            .join("\n"),
    );
}

#[test]
fn load_says_what_a_bad_target_argument_is_and_where_a_bad_file_is_wrong() {
    let files =
        [("bad.toml", "base = \"n150\"\nl1_size = \"big\"\n"), ("bad.json", r#"{"base": 1}"#)];
    expect![[r#"
        error: `n151` is neither a builtin target (n150, n150s, wormhole, wormhole_b0, n300, n300s, p150, p150a, p150b, blackhole) nor a readable target file: cannot read `n151`: no such file
        error: bad.toml:2:11: `l1_size`: invalid type: string "big", expected u64
        error: bad.json: `base`: invalid type: integer `1`, expected a string"#]]
    .assert_eq(&[Some("n151"), Some("bad.toml"), Some("bad.json")].map(|a| load(a, &files)).join("\n"));
}
