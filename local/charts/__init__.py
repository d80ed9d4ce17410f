"""The releases and objects `make up` would apply, checked with real components: Helm (`helm`, built from
its Go module) renders the pinned charts with the synthesized values (`chart_inputs`, `chart_render`), a
throwaway API server with the real CRDs (`validation_server`) dry-runs every object (`dry_run`,
`validate_charts`), and `render` gives the addons stack's objects in their local-target form."""
