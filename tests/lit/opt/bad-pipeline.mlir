// RUN: not strata-opt %s -p infer-shapes,no-such-pass 2>&1 | filecheck %s --check-prefix=UNKNOWN
// RUN: not strata-opt %s -p 'decompose{depth=2}' 2>&1 | filecheck %s --check-prefix=OPTION

// A pass name or option that does not exist is an error that says so.
// UNKNOWN: strata-opt: error: bad pass pipeline 'infer-shapes,no-such-pass': Unrecognized passes: ['no-such-pass']
// OPTION:  strata-opt: error: bad pass pipeline 'decompose{depth=2}':
// OPTION-SAME: depth
func.func @graph() {
  func.return
}
