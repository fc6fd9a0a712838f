// Merged into @jupyter/builder's configuration (package.json "jupyterlab.rspackConfig").
//
// The built extension is committed (jupyter_ext/labextension/) and a test rebuilds it
// to compare byte for byte, so the build must not depend on where the checkout lies.
// The production default, hashed "deterministic" module ids, does: the federation
// container's id is a hash over the absolute paths of the exposed modules, so a clone
// in another folder wrote another remoteEntry. Named ids are paths relative to this
// folder (and a module added elsewhere renumbers nothing).
module.exports = {
  optimization: { moduleIds: 'named' }
};
