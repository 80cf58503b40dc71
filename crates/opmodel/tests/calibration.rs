//! Runs every calibration point of our notes through the analytical model and pins the table
//! (reference vs model, relative error, within-5% flags) as a golden file.

#[test]
fn calibration_table_matches_the_golden_file() {
    let report = opmodel::calibration::calibration_report();
    expect_test::expect_file!["../../../test-data/opmodel/calibration.txt"].assert_eq(&report);
}
