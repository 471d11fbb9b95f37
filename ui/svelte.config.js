import { vitePreprocess } from '@sveltejs/vite-plugin-svelte';

export default {
  preprocess: vitePreprocess(),
  // Component styles go to the CSS file, never into inline <style> at runtime (strict CSP).
  compilerOptions: { css: 'external' },
};
