// SYNTHETIC: deliberately against .clang-format; the format check must refuse it (ctest
// format.check_fails_on_misformatted_code). Never compiled.
int   badly_spaced ( int x ){ return x+1 ; }
