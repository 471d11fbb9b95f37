import './lib/locale';
import { mount } from 'svelte';
import App from './App.svelte';
import './app.css';
import './shared.css';

const target = document.getElementById('app');
if (target) mount(App, { target });
