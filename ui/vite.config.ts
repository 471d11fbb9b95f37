import { defineConfig } from 'vite';
import { svelte } from '@sveltejs/vite-plugin-svelte';

export default defineConfig({
  plugins: [svelte()],
  clearScreen: false,
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    target: 'es2022',
    // Keep every script and style in files: the CSP allows no inline code.
    assetsInlineLimit: 0,
    cssCodeSplit: false,
  },
  server: { port: 5173, strictPort: true },
});
