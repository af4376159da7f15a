// alto: the command-line face of the library. Exit status 0 on success, 1 on any user error
// (a one-line message on stderr), never a signal.

#include <exception>
#include <iostream>
#include <string>

#include "alto/audio/versions.h"
#include "alto/core/activation_memory.h"
#include "alto/core/error.h"
#include "alto/core/system_info.h"
#include "alto/core/threading.h"
#include "commands.h"
#include "console.h"
#include "inputs.h"
#include "stages.h"

int main(int argc, char** argv) {
  alto::cli::start_stages();
  alto::keep_freed_memory();  // a process-wide allocator choice: the application's to make
  CLI::App app{
      "alto: audio for language models — decode, convert, features, tokens, transcripts, speech"};
  app.require_subcommand(1);
  int threads = alto::default_num_threads();
  app.add_option("--threads", threads, "Threads for alto and libtorch (default: all cores)")
      ->check(CLI::PositiveNumber);
  bool verbose = false;
  app.add_flag("--verbose", verbose,
               "Time each stage and report the peak memory on stderr; full texts of internal "
               "errors");
  app.parse_complete_callback([&] {
    alto::set_num_threads(threads);
    alto::cli::set_verbose(verbose);
    if (verbose) alto::cli::enable_stage_report();
  });
  app.set_version_flag("--version", [] {
    const alto::BlasInfo blas = alto::blas_info();
    return "alto " + alto::version() + "\nlibtorch " + alto::torch_version() + "\n" +
           alto::audio::library_versions() + "\nBLAS: " + blas.library +
           (blas.config.empty() ? "" : " (" + blas.config + ")") +
           (blas.core.empty() ? "" : ", core " + blas.core) + "\nCPU: " + blas.cpu.to_string();
  });
  alto::cli::add_info_command(app);
  alto::cli::add_convert_command(app);
  alto::cli::add_features_command(app);
  alto::cli::add_tokenize_command(app);
  alto::cli::add_embed_command(app);
  alto::cli::add_transcribe_command(app);
  alto::cli::add_encode_command(app);
  alto::cli::add_decode_command(app);
  alto::cli::add_chat_command(app);
  alto::cli::add_speak_command(app);

  int status = 0;
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::Success& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "alto: " << e.what() << " (see alto --help)\n";
    return 1;
  } catch (const alto::cli::InputsFailed&) {
    status = 1;  // each failure has had its line
  } catch (const std::exception& e) {
    std::cerr << "alto: " << alto::cli::error_line(e) << "\n";
    status = 1;
  }
  alto::cli::print_stage_report();
  return status;
}
