"""tune_ko2en_vue: Korean queries over the English Vue pages (set A), written by hand.

Each query was written from reading ONE target passage (relevance 2) before any retrieval system saw the set;
relevance-1 passages were found by regex-grepping the corpus for the query's key English terms and reading the hits.
Entries: (text, kind, relevance-2 passage, relevance-1 passages) with passage numbers NNNN of vue-en-NNNN.
kind: term = keyword query (transliterations, identifiers), question = how-to / natural question,
paraphrase = the situation described in other words, avoiding the passage's own terms.
"""

Q = [
    # Computed Properties
    ("컴퓨티드 캐싱 vs 메서드 호출 차이", "term", "0004", "0005"),
    ("computed에 값을 직접 대입하려면 어떻게 하나요?", "question", "0007", "0006"),
    ("computed getter 안에서 API 호출이나 DOM 변경해도 되나요?", "question", "0009", "0010"),
    # Watchers
    ("watch deep 옵션 중첩 속성 변경 감지", "term", "0014", "0015"),
    ("컴포넌트 처음 로드될 때도 watch 콜백 바로 실행 immediate", "term", "0016", "0019"),
    ("watch vs watchEffect 의존성 추적 차이", "term", "0020", "0019 0018"),
    ("id가 바뀌었는데 이전 요청 응답이 뒤늦게 와서 화면을 덮어씀", "paraphrase", "0021", "0022"),
    ("watch 콜백에서 업데이트된 DOM에 접근하려면?", "question", "0024", "0023"),
    # List Rendering
    ("v-if랑 v-for를 한 태그에 같이 써도 되나요?", "question", "0034", ""),
    ("v-for key 필요 이유 in-place patch", "term", "0035", "0036"),
    ("원본 배열은 그대로 두고 짝수만 걸러서 목록에 보여주고 싶다", "paraphrase", "0040", "0041"),
    # Form Input Bindings
    ("한글 입력 중에 v-model 값이 바로 갱신 안 돼요", "question", "0044", ""),
    ("체크박스 체크 여부에 따라 yes no 값 true-value false-value", "term", "0049", ""),
    # Event Handling
    ("인라인 핸들러에서 원래 DOM 이벤트 객체 $event 넘기기", "term", "0060", "0057"),
    ("이벤트 수식어 .prevent .self 순서 차이", "term", "0062", "0061"),
    ("Ctrl 키만 누른 채 클릭했을 때만 실행하고 다른 키가 같이 눌리면 무시", "paraphrase", "0066", "0065"),
    # Props
    ("props 구조 분해 반응성 3.5 기본값", "term", "0070", "0071 0269"),
    ("구조 분해한 prop을 watch나 컴포저블에 넘기려면 어떻게 해야 하나요?", "question", "0071", "0070"),
    ("자식 컴포넌트에서 prop 값 직접 변경 경고 단방향 데이터 흐름", "term", "0077", "0078 0079"),
    ("부모가 준 초깃값을 자식이 받아 이후로는 자기 상태처럼 쓰고 싶을 때", "paraphrase", "0078", "0077"),
    ("prop 유효성 검사 required default validator", "term", "0080", "0081 0082 0083"),
    # Component Events
    ("손자 컴포넌트에서 emit한 이벤트를 할아버지 컴포넌트에서 받을 수 있나요?", "question", "0086", ""),
    ("script setup에서 $emit 대신 defineEmits 반환 함수", "term", "0088", "0089"),
    # Component v-model
    ("defineModel 컴포넌트 양방향 바인딩", "term", "0092", "0093 0094 0095 0096"),
    ("한 컴포넌트에 v-model 여러 개 바인딩하려면?", "question", "0097", "0096 0101"),
    ("커스텀 v-model 수식어 capitalize 처리", "term", "0098", "0099 0100 0101"),
    # Slots
    ("슬롯 안에서 자식 컴포넌트의 변수를 쓸 수 있나요?", "question", "0104", "0111 0112"),
    ("이름 있는 슬롯 v-slot # 단축 문법", "term", "0107", "0106 0108 0113"),
    ("헤더 영역에 내용이 전달됐을 때만 감싸는 div를 그리고 싶다", "paraphrase", "0109", ""),
    ("스코프드 슬롯 자식이 슬롯에 데이터 전달 slot props", "term", "0111", "0112 0113 0115"),
    ("이름 있는 슬롯이랑 기본 스코프 슬롯 섞어 쓰면 컴파일 에러", "term", "0113", "0114"),
    ("화면은 그리지 않고 마우스 위치 추적 같은 로직만 제공하는 컴포넌트", "paraphrase", "0116", "0179"),
    # Provide / Inject
    ("props 드릴링 해결 provide inject", "term", "0117", "0119 0118"),
    ("하위 컴포넌트가 주입받은 상태를 마음대로 못 바꾸게 하고 싶다", "paraphrase", "0126", "0127"),
    ("provide 키 이름 충돌 피하려면 어떻게 하나요?", "question", "0128", "0279"),
    # KeepAlive
    ("탭 전환할 때 동적 컴포넌트 상태 유지 KeepAlive", "term", "0129", "0130"),
    ("캐시된 컴포넌트가 다시 화면에 나타날 때 실행되는 훅은?", "question", "0133", "0134"),
    # Teleport
    ("부모 요소 transform 때문에 모달 position fixed가 깨지고 z-index에 가려짐", "paraphrase", "0137",
     "0135 0136"),
    ("모바일에서는 Teleport 끄고 인라인으로 렌더링하려면?", "question", "0140", ""),
    # Transition
    ("트랜지션 클래스 v-enter-from v-leave-to 적용 시점", "term", "0146", "0147 0148"),
    ("중첩 요소 트랜지션 끝나는 시간 duration 지정", "term", "0154", "0153"),
    ("기존 요소가 완전히 사라진 다음에 새 요소가 들어오게 하려면?", "question", "0159", "0160"),
    ("숫자만 바뀌면 트랜지션 효과가 안 나와요", "question", "0162", ""),
    # Composables
    ("useFetch URL 바뀔 때마다 다시 요청 toValue watchEffect", "term", "0169", "0170 0171 0172"),
    ("컴포저블 반환값 ref 객체 구조분해 반응성", "term", "0173", ""),
    ("컴포저블을 await 뒤나 setTimeout 안에서 호출해도 되나요?", "question", "0175", ""),
    # Reactivity in Depth
    ("Vue 3 반응성 Proxy getter setter 동작 원리", "term", "0185", "0186 0187 0188"),
    ("어떤 의존성 때문에 리렌더링 됐는지 디버깅 onRenderTriggered", "term", "0193", "0194 0195"),
    ("실행 취소 기능을 위해 상태 스냅샷을 효율적으로 남기는 방법", "paraphrase", "0197", "0196"),
    ("Solid Angular 시그널과 Vue ref 비교", "term", "0200", "0202 0203 0204 0201"),
    # Vue and Web Components
    ("커스텀 엘리먼트 failed to resolve component 경고 isCustomElement", "term", "0207", ""),
    ("웹 컴포넌트에 객체를 prop으로 넘기려면?", "question", "0208", "0211"),
    ("다른 프레임워크를 쓰는 팀에도 배포할 수 있는 컴포넌트를 Vue로 만들기", "paraphrase", "0209",
     "0210 0216 0217"),
    # SSR
    ("서버 사이드 렌더링 장점 SEO 콘텐츠 표시 속도", "term", "0229", "0230 0231 0255"),
    ("마케팅 페이지 몇 개 SEO 때문에 SSR 도입해야 하나요?", "question", "0233", "0232 0255"),
    ("SSR 교차 요청 상태 오염 싱글톤 스토어", "term", "0244", "0245"),
    ("서버와 클라이언트 시간대 달라서 hydration mismatch", "term", "0247", "0246 0248"),
    ("SSR에서 setup에 setInterval 넣으면 왜 문제가 되나요?", "question", "0242", "0174"),
    # Performance
    ("목록에서 선택된 항목 하나만 바뀌었는데 모든 행이 다시 그려짐", "paraphrase", "0260", ""),
    ("항목이 수천 개인 목록을 빠르게 렌더링하려면?", "question", "0264", ""),
    ("큰 중첩 배열 반응성 오버헤드 shallowRef", "term", "0265", "0196"),
    ("라우트 컴포넌트 지연 로딩 코드 분할", "term", "0258", "0259"),
    # TypeScript with Composition API
    ("defineProps 타입 기반 선언 기본값 withDefaults", "term", "0269", "0270 0070"),
    ("이벤트 핸들러 event 인자 타입을 어떻게 지정하나요?", "question", "0278", ""),
    ("자식 컴포넌트 ref 타입 InstanceType useTemplateRef", "term", "0282", "0283 0284"),
]
