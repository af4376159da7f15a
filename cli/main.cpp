// alto: the command-line face of the library. Exit status 0 on success, 1 on any user error
// (a one-line message on stderr), never a signal.

#include <exception>
#include <iostream>

#include "alto/audio/versions.h"
#include "alto/core/error.h"
#include "alto/core/system_info.h"
#include "alto/core/threading.h"
#include "commands.h"

int main(int argc, char** argv) {
  CLI::App app{"alto: audio for language models — decode, convert, features, tokens, transcripts, speech"};
  app.require_subcommand(1);
  int threads = alto::default_num_threads();
  app.add_option("--threads", threads, "Threads for alto and libtorch (default: all cores)")
      ->check(CLI::PositiveNumber);
  app.parse_complete_callback([&] { alto::set_num_threads(threads); });
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
  } catch (const alto::Error& e) {
    std::cerr << "alto: error: " << e.what() << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "alto: internal error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
